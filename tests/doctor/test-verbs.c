/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The verbs probe over a table of fake verbs calls (every step made to fail once, every
 * resource released), and the real libibverbs and librdmacm of this machine (RDMA netlink
 * is tests/discovery/test-netlink.c's). TAP output.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "common.h"
#include "verbs-internal.h"

#include "../tap.h"
#include "../tap-error.h"

/* ---- fake verbs ---------------------------------------------------------------- */

#define MAX_FAKE 4

static struct {
	int n; /* devices listed; -1 = the list call fails */
	int list_errno;
	const char *names[MAX_FAKE];
	/* per device: the step that fails and its errno (0 = errno left unset) */
	enum disc_verbs_step fail[MAX_FAKE];
	int fail_errno[MAX_FAKE];
	int cm_errno; /* 0 = the channel opens */
	/* what happened */
	int opened, closed, pds, pds_freed, mrs, mrs_freed, lists_freed, channels, channels_freed;
	size_t mr_len;
	bool mr_buf_writable;
} fk;

static struct ibv_device fake_devs[MAX_FAKE];
static struct ibv_device *fake_list[MAX_FAKE + 1];
static char fake_obj[3][MAX_FAKE]; /* stand-ins for contexts, PDs and MRs */

static int idx_of(const void *p, int kind)
{
	return (int)((const char *)p - fake_obj[kind]);
}

static struct ibv_device **f_get_list(int *ret_n)
{
	if (fk.n < 0) {
		errno = fk.list_errno;
		return NULL;
	}
	for (int i = 0; i < fk.n; i++)
		fake_list[i] = &fake_devs[i];
	fake_list[fk.n] = NULL;
	*ret_n = fk.n;
	return fake_list;
}

static void f_free_list(struct ibv_device **l)
{
	fk.lists_freed += l == fake_list;
}

static const char *f_name(struct ibv_device *d)
{
	return fk.names[d - fake_devs];
}

static bool fails(int i, enum disc_verbs_step s)
{
	if (fk.fail[i] != s)
		return false;
	errno = fk.fail_errno[i];
	return true;
}

static struct ibv_context *f_open(struct ibv_device *d)
{
	int i = (int)(d - fake_devs);

	if (fails(i, DISC_VERBS_STEP_OPEN))
		return NULL;
	fk.opened++;
	return (struct ibv_context *)(void *)&fake_obj[0][i];
}

static int f_close(struct ibv_context *c)
{
	fk.closed++;
	return 0;
}

static struct ibv_pd *f_alloc_pd(struct ibv_context *c)
{
	int i = idx_of(c, 0);

	if (fails(i, DISC_VERBS_STEP_PD))
		return NULL;
	fk.pds++;
	return (struct ibv_pd *)(void *)&fake_obj[1][i];
}

static int f_dealloc_pd(struct ibv_pd *pd)
{
	fk.pds_freed++;
	return 0;
}

static struct ibv_mr *f_reg_mr(struct ibv_pd *pd, void *addr, size_t len)
{
	int i = idx_of(pd, 1);

	fk.mr_len = len;
	/* A real registration pins these pages: they must be mapped and writable. */
	((volatile char *)addr)[0] = 1;
	((volatile char *)addr)[len - 1] = 1;
	fk.mr_buf_writable = true;
	if (fails(i, DISC_VERBS_STEP_REG_MR))
		return NULL;
	fk.mrs++;
	return (struct ibv_mr *)(void *)&fake_obj[2][i];
}

static int f_dereg_mr(struct ibv_mr *mr)
{
	fk.mrs_freed++;
	return 0;
}

static struct rdma_event_channel *f_create_channel(void)
{
	static char ch;

	if (fk.cm_errno) {
		errno = fk.cm_errno;
		return NULL;
	}
	fk.channels++;
	return (struct rdma_event_channel *)(void *)&ch;
}

static void f_destroy_channel(struct rdma_event_channel *ch)
{
	fk.channels_freed++;
}

static const struct disc_verbs_ops fake_ops = {
    .get_device_list = f_get_list,
    .free_device_list = f_free_list,
    .get_device_name = f_name,
    .open_device = f_open,
    .close_device = f_close,
    .alloc_pd = f_alloc_pd,
    .dealloc_pd = f_dealloc_pd,
    .reg_mr = f_reg_mr,
    .dereg_mr = f_dereg_mr,
    .create_event_channel = f_create_channel,
    .destroy_event_channel = f_destroy_channel,
};

static void reset(void)
{
	memset(&fk, 0, sizeof(fk));
}

static bool balanced(void)
{
	return fk.opened == fk.closed && fk.pds == fk.pds_freed && fk.mrs == fk.mrs_freed &&
	       fk.channels == fk.channels_freed;
}

static void test_no_list(void)
{
	struct disc_verbs_report *r = NULL;

	reset();
	fk.n = -1;
	fk.list_errno = ENOSYS;
	fk.cm_errno = ENODEV;
	ok(disc_verbs_probe_ops(&fake_ops, 4096, &r) == 0 && r->list_error == -ENOSYS &&
	       r->n_devices == 0 && r->cm_error == -ENODEV && r->mr_size == 4096,
	   "ibv_get_device_list fails with ENOSYS: list_error -ENOSYS, no devices, cm probed");
	disc_verbs_report_free(r);

	reset();
	fk.n = -1;
	fk.list_errno = 0;
	ok(disc_verbs_probe_ops(&fake_ops, 4096, &r) == 0 && r->list_error == -EIO &&
	       r->cm_error == 0 && balanced(),
	   "a list failure that leaves errno unset is still a failure (-EIO)");
	disc_verbs_report_free(r);

	reset();
	fk.n = 0;
	ok(disc_verbs_probe_ops(&fake_ops, 4096, &r) == 0 && r->list_error == 0 &&
	       r->n_devices == 0 && fk.lists_freed == 1,
	   "an empty device list: no error, no devices, list freed");
	disc_verbs_report_free(r);
}

static void test_steps(void)
{
	struct disc_verbs_report *r = NULL;
	const size_t mr = 3 << 20;

	reset();
	fk.n = 4;
	fk.names[0] = "mlx5_0";
	fk.names[1] = "mlx5_1";
	fk.names[2] = "mlx5_2";
	fk.names[3] = "rocep59s0f0";
	fk.fail[1] = DISC_VERBS_STEP_OPEN;
	fk.fail_errno[1] = EACCES;
	fk.fail[2] = DISC_VERBS_STEP_REG_MR;
	fk.fail_errno[2] = ENOMEM;
	fk.fail[3] = DISC_VERBS_STEP_PD;
	fk.fail_errno[3] = EPERM;
	ok(disc_verbs_probe_ops(&fake_ops, mr, &r) == 0 && r->n_devices == 4,
	   "four devices probed");
	ok(strcmp(r->devices[0].name, "mlx5_0") == 0 &&
	       r->devices[0].failed == DISC_VERBS_STEP_NONE && r->devices[0].error == 0,
	   "mlx5_0: every step worked");
	ok(r->devices[1].failed == DISC_VERBS_STEP_OPEN && r->devices[1].error == -EACCES,
	   "mlx5_1: open failed with EACCES");
	ok(r->devices[2].failed == DISC_VERBS_STEP_REG_MR && r->devices[2].error == -ENOMEM,
	   "mlx5_2: memory registration failed with ENOMEM");
	ok(strcmp(r->devices[3].name, "rocep59s0f0") == 0 &&
	       r->devices[3].failed == DISC_VERBS_STEP_PD && r->devices[3].error == -EPERM,
	   "rocep59s0f0: PD allocation failed with EPERM");
	ok(fk.mr_len == mr && fk.mr_buf_writable,
	   "the MR covers --mr-size bytes of writable memory");
	ok(balanced() && fk.opened == 3 && fk.pds == 2 && fk.mrs == 1 && fk.lists_freed == 1,
	   "every context, PD, MR and the list released (opened %d closed %d pds %d/%d mrs %d/%d)",
	   fk.opened, fk.closed, fk.pds, fk.pds_freed, fk.mrs, fk.mrs_freed);
	disc_verbs_report_free(r);

	/* More than the address space: mmap fails, the PD and the context are released. */
	reset();
	fk.n = 1;
	fk.names[0] = "mlx5_0";
	ok(disc_verbs_probe_ops(&fake_ops, (size_t)1 << 62, &r) == 0 &&
	       r->devices[0].failed == DISC_VERBS_STEP_MMAP && r->devices[0].error == -ENOMEM &&
	       balanced() && fk.opened == 1,
	   "an MR larger than memory: mmap fails with ENOMEM, everything released");
	disc_verbs_report_free(r);

	reset();
	fk.n = 2;
	fk.names[0] = "mlx5\n0\x1b[2J";
	fk.names[1] = NULL;
	ok(disc_verbs_probe_ops(&fake_ops, 4096, &r) == 0 && strcmp(r->devices[0].name, "?") == 0 &&
	       strcmp(r->devices[1].name, "?") == 0,
	   "device names with control characters or none at all are shown as '?'");
	disc_verbs_report_free(r);

	reset();
	fk.n = 1;
	fk.names[0] = "mlx5_0";
	fk.fail[0] = DISC_VERBS_STEP_OPEN;
	ok(disc_verbs_probe_ops(&fake_ops, 4096, &r) == 0 && r->devices[0].error == -EIO,
	   "a failed open that leaves errno unset is -EIO, never success");
	disc_verbs_report_free(r);

	ok(disc_verbs_probe_ops(&fake_ops, 0, &r) == -EINVAL, "mr_size 0 is refused");
	ok(strcmp(disc_verbs_step_name(DISC_VERBS_STEP_OPEN), "ibv_open_device") == 0 &&
	       strcmp(disc_verbs_step_name(DISC_VERBS_STEP_PD), "ibv_alloc_pd") == 0 &&
	       strcmp(disc_verbs_step_name(DISC_VERBS_STEP_REG_MR), "ibv_reg_mr") == 0 &&
	       strcmp(disc_verbs_step_name(DISC_VERBS_STEP_MMAP), "mmap") == 0 &&
	       strcmp(disc_verbs_step_name(DISC_VERBS_STEP_NONE), "") == 0,
	   "step names are the verbs calls");
}

/* ---- this machine -------------------------------------------------------------------- */

static void test_real(void)
{
	struct disc_verbs_report *r = NULL;
	struct stat st;
	int rr;

	if (stat("/sys/class/infiniband", &st) == 0) {
		printf("ok %u - real verbs probe: no device # SKIP this machine has RDMA devices\n",
		       ++tap_count);
	} else {
		rr = disc_verbs_probe(1 << 20, &r);
		ok(rr == 0 && r->n_devices == 0 && r->cm_error < 0,
		   "real libibverbs without RDMA in the kernel: no device (ibv_get_device_list: "
		   "%s), rdma_cm fails (%s)",
		   rr == 0 && r->list_error ? strerror(-r->list_error) : "empty list",
		   rr == 0 ? strerror(-r->cm_error) : "?");
		disc_verbs_report_free(r);
	}

}

int main(void)
{
	test_no_list();
	test_steps();
	test_real();
	tap_fresh();
	return tap_done();
}
