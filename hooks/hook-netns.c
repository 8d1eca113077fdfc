/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `rdma-cdi-hook --netns-move DEV`: moves an RDMA device into the container's network
 * namespace, what rdma-cni does, from the createRuntime hook (hooks.h). The decision is
 * hook_netns_plan() on facts gathered here; the kernel does the move over RDMA netlink
 * (discovery/netlink.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common.h"
#include "hooks.h"
#include "netlink.h"

enum hook_netns_verdict hook_netns_plan(const struct hook_netns_facts *f)
{
	if (f->same_netns)
		return HOOK_NETNS_HOST_NS;
	if (f->here && f->there)
		return HOOK_NETNS_SHARED; /* every namespace sees it: the shared mode */
	if (f->here)
		return f->mode == DISC_NETNS_SHARED ? HOOK_NETNS_SHARED : HOOK_NETNS_MOVE;
	return f->there ? HOOK_NETNS_ALREADY : HOOK_NETNS_GONE;
}

const char *hook_netns_fix(enum disc_netns_mode mode, int kernel_error)
{
	if (mode == DISC_NETNS_SHARED || kernel_error == -EBUSY)
		return "the RDMA netns mode is shared: set it to exclusive at boot, before any "
		       "RDMA device or network namespace exists (`rdma system set netns "
		       "exclusive`, or ib_core netns_mode=0), or give the pool `netns: none`";
	if (kernel_error == -EOPNOTSUPP)
		return "this device's driver cannot change network namespace (rxe and siw "
		       "cannot; mlx5 can): give the pool `netns: none`, or use devices of a "
		       "driver that can";
	if (kernel_error == -EPERM)
		return "the hook needs CAP_NET_ADMIN (the runtime runs hooks as root)";
	return "see `rdma-cdi doctor`";
}

/* In the namespace: 0 yes, 1 no, 2 the question could not be asked. */
static int ask_visible(const char *dev)
{
	uint32_t idx;
	int r = disc_nl_dev_index(dev, &idx, NULL);

	return r == 0 ? 0 : r == -ENODEV ? 1 : 2;
}

static int ask_netdev(const char *dev)
{
	uint32_t idx;

	if (disc_nl_dev_index(dev, &idx, NULL) < 0)
		return 2;
	return disc_nl_port_has_netdev(dev, idx, NULL) == 1 ? 0 : 1;
}

/* ask(dev) answered from a child that enters the namespace nsfd refers to (a namespace is
 * per thread; the hook must stay in its own): 1 yes, 0 no, or -errno. */
static int ask_in(int nsfd, int (*ask)(const char *dev), const char *dev)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (pid == 0)
		_exit(setns(nsfd, CLONE_NEWNET) < 0 ? 2 : ask(dev));
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	if (!WIFEXITED(status) || WEXITSTATUS(status) > 1)
		return -EIO;
	return WEXITSTATUS(status) == 0;
}

static int same_netns(int nsfd, bool *ret)
{
	struct stat ours, theirs;

	if (stat("/proc/self/ns/net", &ours) < 0 || fstat(nsfd, &theirs) < 0)
		return -errno;
	*ret = ours.st_dev == theirs.st_dev && ours.st_ino == theirs.st_ino;
	return 0;
}

static int gather(int nsfd, const char *dev, struct hook_netns_facts *f, uint32_t *ret_idx,
		  struct rc_error **err)
{
	int r;

	r = same_netns(nsfd, &f->same_netns);
	if (r < 0)
		return rc_error_set(err, r, "%s: cannot compare network namespaces: %s", dev,
				    strerror(-r));
	if (f->same_netns)
		return 0;
	r = disc_netns_mode_read(&f->mode, err);
	if (r < 0)
		return rc_error_wrap(err, r, "%s", dev);
	if (f->mode == DISC_NETNS_UNKNOWN)
		return rc_error_set(err, -EPROTONOSUPPORT, "%s: cannot move it into the "
				    "container's network namespace: this kernel has no RDMA netlink "
				    "(is ib_core loaded?); give the pool `netns: none`", dev);
	{
		_cleanup_rc_error_ struct rc_error *e = NULL;

		r = disc_nl_dev_index(dev, ret_idx, &e);
		if (r < 0 && r != -ENODEV)
			return rc_error_set(err, r, "%s", rc_error_msg(e, r));
	}
	f->here = r == 0;
	r = ask_in(nsfd, ask_visible, dev);
	if (r < 0)
		return rc_error_set(err, r, "%s: cannot look into the container's network "
				    "namespace: %s", dev, strerror(-r));
	f->there = r == 1;
	return 0;
}

int hook_netns_move(int nsfd, const char *dev, bool roce, enum hook_netns_verdict *ret_verdict,
		    struct rc_error **err)
{
	struct hook_netns_facts f = {.mode = DISC_NETNS_UNKNOWN};
	uint32_t idx = 0;
	int r;

	r = gather(nsfd, dev, &f, &idx, err);
	if (r < 0)
		return r;
	*ret_verdict = hook_netns_plan(&f);
	switch (*ret_verdict) {
	case HOOK_NETNS_HOST_NS:
		return 0;
	case HOOK_NETNS_SHARED:
		return rc_error_set(err, -EBUSY, "%s: cannot move it into the container's network "
				    "namespace (mode %s): %s", dev, disc_netns_mode_name(f.mode),
				    hook_netns_fix(DISC_NETNS_SHARED, 0));
	case HOOK_NETNS_GONE:
		return rc_error_set(err, -ENODEV, "%s: no such RDMA device, neither here nor in the "
				    "container's network namespace (unplugged or unregistered since "
				    "the spec was written?)", dev);
	case HOOK_NETNS_MOVE:
		r = disc_nl_move_to_netns(dev, idx, nsfd, NULL);
		if (r < 0)
			return rc_error_set(err, r, "%s: the kernel refused to move it into the "
					    "container's network namespace (mode %s): %s; %s", dev,
					    disc_netns_mode_name(f.mode), strerror(-r),
					    hook_netns_fix(f.mode, r));
		break;
	case HOOK_NETNS_ALREADY:
		break;
	}
	if (roce && ask_in(nsfd, ask_netdev, dev) == 0)
		return rc_error_set(err, -ENXIO, "%s is in the container's network namespace, but "
				    "its netdev is not: RoCE needs both (move the netdev with the "
				    "SR-IOV CNI or the runtime's network setup)", dev);
	return 0;
}

int hook_netns_open(pid_t pid, int *ret_fd, struct rc_error **err)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return rc_error_set(err, -errno, "pid %d: no network namespace to move into (%s)",
				    (int)pid, strerror(errno));
	*ret_fd = fd;
	return 0;
}
