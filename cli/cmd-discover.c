/* SPDX-License-Identifier: Apache-2.0 */
/* rdma-cdi discover: the RDMA devices of this node, as a table or as JSON. */
#include <string.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "common.h"
#include "netlink.h"

enum { OPT_JSON = CLI_OPT_COMMAND };

struct discover_args {
	struct cli_common common;
	bool json;
};

static const struct cli_option discover_options[] = {
    CLI_OPTIONS_NODE,
    {"json", no_argument, OPT_JSON, NULL,
     "print JSON (the format is documented in docs/discover-json.md)"},
    CLI_OPTIONS_GLOBAL,
    {},
};

static int discover_option(void *ctx, int opt, const char *arg)
{
	struct discover_args *a = ctx;

	if (opt == OPT_JSON)
		a->json = true;
	return 0;
}

static const struct cli_parser discover_parser = {
    .name = "discover",
    .synopsis = "[OPTIONS]",
    .description = "Shows the RDMA devices of this node: each device with its PCI function, "
		   "NUMA node, uverbs device and ports (link layer, state, netdev), and the "
		   "rdma_cm node. A device is usable (has an INDEX) when it has a uverbs "
		   "device. Then the running kernel's RDMA netns mode (exclusive, shared, or "
		   "unknown without RDMA netlink). Problems found on the way are printed as "
		   "warnings.",
    .options = discover_options,
    .footer = "Exit status: 0 success (also when the node has no RDMA device), 1 failure, "
	      "2 bad usage.",
    .option = discover_option,
};

/* Values come from sysfs (discovery validates most): escaped, a row stays one row. */
static void cell(const char *s, int width, const char *sep)
{
	char buf[256];

	if (!s || !*s)
		s = "-";
	text_escape(buf, sizeof(buf), s, strlen(s), false);
	printf("%-*s%s", width, buf, sep);
}

static void print_table(const struct disc_node *node)
{
	size_t index = 0;

	printf("%-5s %-14s %-13s %-17s %-4s %-9s %-4s %-10s %-7s %s\n", "INDEX", "NAME", "PCI",
	       "FUNCTION", "NUMA", "UVERBS", "PORT", "LINK", "STATE", "NETDEV");
	for (size_t i = 0; i < node->n_devices; i++) {
		const struct disc_device *d = &node->devices[i];
		char idx[16] = "-", numa[16] = "-", func[48];

		if (disc_device_usable(d))
			snprintf(idx, sizeof(idx), "%zu", index++);
		if (d->numa_node >= 0)
			snprintf(numa, sizeof(numa), "%d", d->numa_node);
		if (d->is_vf)
			snprintf(func, sizeof(func), "VF of %s", d->pf_pci[0] ? d->pf_pci : "?");
		else
			snprintf(func, sizeof(func), "%s", d->pci[0] ? "PF" : "-");

		for (size_t p = 0; p < (d->n_ports ? d->n_ports : 1); p++) {
			const struct disc_port *port = d->n_ports ? &d->ports[p] : NULL;
			char pnum[16] = "-";

			if (port)
				snprintf(pnum, sizeof(pnum), "%u", port->num);
			if (p == 0) {
				cell(idx, 5, " ");
				cell(d->name, 14, " ");
				cell(d->pci, 13, " ");
				cell(func, 17, " ");
				cell(numa, 4, " ");
				cell(d->has_uverbs ? d->uverbs.name : NULL, 9, " ");
			} else {
				printf("%-5s %-14s %-13s %-17s %-4s %-9s ", "", "", "", "", "", "");
			}
			cell(pnum, 4, " ");
			cell(port ? port->link_layer : NULL, 10, " ");
			cell(port ? port->state_name : NULL, 7, " ");
			cell(port ? port->netdev : NULL, 0, "\n");
		}
	}
	for (size_t i = 0; i < node->n_devices; i++)
		if (node->devices[i].lent)
			printf("%s: %s (its ports are not visible here)\n", node->devices[i].name,
			       DISC_LENT_REASON);
	if (node->has_rdma_cm)
		printf("rdma_cm: %u:%u\n", node->rdma_cm.major, node->rdma_cm.minor);
	else
		printf("rdma_cm: none (rdma_ucm not loaded?)\n");
}

/* The running kernel's RDMA netns mode, whatever --sysfs-root says: unknown when the
 * kernel has no RDMA netlink (no error), and when the read fails (a warning says why). */
static enum disc_netns_mode netns_mode(void)
{
	enum disc_netns_mode mode = DISC_NETNS_UNKNOWN;
	_cleanup_rc_error_ struct rc_error *err = NULL;
	int r = disc_netns_mode_read(&mode, &err);

	if (r < 0)
		log_warning("RDMA netns mode unknown: %s", rc_error_msg(err, r));
	return r < 0 ? DISC_NETNS_UNKNOWN : mode;
}

int cmd_discover(int argc, char **argv)
{
	struct discover_args a = {};
	struct disc_node *node = NULL;
	enum disc_netns_mode mode;
	int r;

	r = cli_parse(&discover_parser, &a, &a.common, argc, argv, NULL);
	if (r != CLI_CONTINUE)
		return r;
	r = cli_resolve_node(&a.common, discover_parser.name);
	if (r == 0)
		r = cli_scan(&a.common, &node);
	if (r != 0)
		goto out;

	if (disc_node_count_usable(node) == 0)
		cli_explain_no_device(&a.common, node, LOG_LVL_WARNING);
	mode = netns_mode();
	if (a.json) {
		_cleanup_(cJSON_Deletep) cJSON *j = disc_node_to_json(node);

		if (j && !cJSON_AddStringToObject(j, "netnsMode", disc_netns_mode_name(mode)))
			cJSON_Delete(TAKE_PTR(j));
		r = cli_print_json(j);
	} else {
		print_table(node);
		printf("RDMA netns mode: %s\n", disc_netns_mode_name(mode));
		r = fflush(stdout) == 0 ? 0 : EXIT_FAIL;
	}
out:
	disc_node_free(node);
	cli_common_done(&a.common);
	return r;
}
