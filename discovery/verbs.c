/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the RDMA stack of the running kernel answers: the devices verbs can open and use,
 * rdma_cm, and the RDMA netns mode. Unlike the rest of discovery this does not read a
 * sysfs tree we are given: it asks libibverbs, librdmacm and the kernel, in this process's
 * namespaces, which is the point of `rdma-cdi doctor` inside a container.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "common.h"
#include "verbs-internal.h"

/*
 * libibverbs and librdmacm are dlopen'ed when the probe runs, not linked: only `doctor`
 * calls them, and linking them (with libnl) costs every other command of the binary
 * their load at start-up, a good part of `generate`'s time on a small node. It also lets
 * rdma-cdi run where rdma-core is not installed; the probe then reports it (ELIBACC).
 * The handles stay open for the life of the process (providers do not unload cleanly).
 */
#define VERBS_SONAME "libibverbs.so.1"
#define RDMACM_SONAME "librdmacm.so.1"

/* ibv_reg_mr is a macro over the real function in current rdma-core: called through
 * this wrapper, with the access flags the probe wants. */
static struct ibv_mr *(*dl_reg_mr)(struct ibv_pd *pd, void *addr, size_t len, int access);

static struct ibv_mr *reg_mr(struct ibv_pd *pd, void *addr, size_t len)
{
	return dl_reg_mr(pd, addr, len, IBV_ACCESS_LOCAL_WRITE);
}

/* Stand-ins when a library cannot be loaded: fail as the real call would, with ELIBACC. */
static struct ibv_device **no_device_list(int *ret_n)
{
	errno = ELIBACC;
	return NULL;
}

static struct rdma_event_channel *no_event_channel(void)
{
	errno = ELIBACC;
	return NULL;
}

#define BIND(h, dst, name) ((dst) = (typeof(dst))dlsym((h), (name)))

/* Fills ops from the libraries; a library that is missing or lacks a symbol leaves the
 * stand-in of its first call, so the probe reports it instead of crashing. */
static void bind_real_ops(struct disc_verbs_ops *ops)
{
	static void *verbs, *cm;
	struct disc_verbs_ops v = {};

	*ops = (struct disc_verbs_ops){.get_device_list = no_device_list,
				       .create_event_channel = no_event_channel};
	if (!verbs)
		verbs = dlopen(VERBS_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (verbs && BIND(verbs, v.get_device_list, "ibv_get_device_list") &&
	    BIND(verbs, v.free_device_list, "ibv_free_device_list") &&
	    BIND(verbs, v.get_device_name, "ibv_get_device_name") &&
	    BIND(verbs, v.open_device, "ibv_open_device") &&
	    BIND(verbs, v.close_device, "ibv_close_device") &&
	    BIND(verbs, v.alloc_pd, "ibv_alloc_pd") &&
	    BIND(verbs, v.dealloc_pd, "ibv_dealloc_pd") && BIND(verbs, dl_reg_mr, "ibv_reg_mr") &&
	    BIND(verbs, v.dereg_mr, "ibv_dereg_mr")) {
		v.reg_mr = reg_mr;
		ops->get_device_list = v.get_device_list;
		ops->free_device_list = v.free_device_list;
		ops->get_device_name = v.get_device_name;
		ops->open_device = v.open_device;
		ops->close_device = v.close_device;
		ops->alloc_pd = v.alloc_pd;
		ops->dealloc_pd = v.dealloc_pd;
		ops->reg_mr = v.reg_mr;
		ops->dereg_mr = v.dereg_mr;
	}
	if (!cm)
		cm = dlopen(RDMACM_SONAME, RTLD_NOW | RTLD_LOCAL);
	if (cm && BIND(cm, v.create_event_channel, "rdma_create_event_channel") &&
	    BIND(cm, v.destroy_event_channel, "rdma_destroy_event_channel")) {
		ops->create_event_channel = v.create_event_channel;
		ops->destroy_event_channel = v.destroy_event_channel;
	}
}

const char *disc_verbs_step_name(enum disc_verbs_step step)
{
	switch (step) {
	case DISC_VERBS_STEP_OPEN:
		return "ibv_open_device";
	case DISC_VERBS_STEP_PD:
		return "ibv_alloc_pd";
	case DISC_VERBS_STEP_MMAP:
		return "mmap";
	case DISC_VERBS_STEP_REG_MR:
		return "ibv_reg_mr";
	case DISC_VERBS_STEP_NONE:
		break;
	}
	return "";
}

/* errno after a failed library call; a library that forgot to set it still fails. */
static int last_error(void)
{
	return errno > 0 ? -errno : -EIO;
}

static void probe_device(const struct disc_verbs_ops *ops, struct ibv_device *dev, size_t mr_size,
			 struct disc_verbs_device *out)
{
	const char *name = ops->get_device_name(dev);
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	void *buf;

	/* The name comes from the kernel via sysfs: print only what is safe. */
	snprintf(out->name, sizeof(out->name), "%s",
		 name && name_is_safe(name, DISC_NAME_MAX - 1) ? name : "?");
	errno = 0;
	ctx = ops->open_device(dev);
	if (!ctx) {
		out->failed = DISC_VERBS_STEP_OPEN;
		out->error = last_error();
		return;
	}
	errno = 0;
	pd = ops->alloc_pd(ctx);
	if (!pd) {
		out->failed = DISC_VERBS_STEP_PD;
		out->error = last_error();
		goto close_device;
	}
	buf = mmap(NULL, mr_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED) {
		out->failed = DISC_VERBS_STEP_MMAP;
		out->error = last_error();
		goto dealloc_pd;
	}
	errno = 0;
	mr = ops->reg_mr(pd, buf, mr_size);
	if (!mr) {
		out->failed = DISC_VERBS_STEP_REG_MR;
		out->error = last_error();
	} else {
		ops->dereg_mr(mr);
	}
	munmap(buf, mr_size);
dealloc_pd:
	ops->dealloc_pd(pd);
close_device:
	ops->close_device(ctx);
}

int disc_verbs_probe_ops(const struct disc_verbs_ops *ops, size_t mr_size,
			 struct disc_verbs_report **ret)
{
	struct disc_verbs_report *rep;
	struct ibv_device **list;
	struct rdma_event_channel *ch;
	int n = 0;

	if (!ops || mr_size == 0 || !ret)
		return -EINVAL;
	rep = calloc(1, sizeof(*rep));
	if (!rep)
		return -ENOMEM;
	rep->mr_size = mr_size;

	errno = 0;
	list = ops->get_device_list(&n);
	if (!list) {
		rep->list_error = last_error();
	} else {
		size_t count = n > 0 ? (size_t)n : 0;

		if (count > DISC_VERBS_MAX_DEVICES) {
			count = DISC_VERBS_MAX_DEVICES;
			rep->truncated = true;
		}
		rep->devices = count ? calloc(count, sizeof(*rep->devices)) : NULL;
		if (count && !rep->devices) {
			ops->free_device_list(list);
			free(rep);
			return -ENOMEM;
		}
		for (size_t i = 0; i < count && list[i]; i++) {
			probe_device(ops, list[i], mr_size, &rep->devices[i]);
			rep->n_devices++;
		}
		ops->free_device_list(list);
	}

	errno = 0;
	ch = ops->create_event_channel();
	if (ch)
		ops->destroy_event_channel(ch);
	else
		rep->cm_error = last_error();

	*ret = rep;
	return 0;
}

int disc_verbs_probe(size_t mr_size, struct disc_verbs_report **ret)
{
	struct disc_verbs_ops ops;

	bind_real_ops(&ops);
	return disc_verbs_probe_ops(&ops, mr_size, ret);
}

void disc_verbs_report_free(struct disc_verbs_report *report)
{
	if (!report)
		return;
	free(report->devices);
	free(report);
}
