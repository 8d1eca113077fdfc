/* SPDX-License-Identifier: Apache-2.0 */
/*
 * claims: a ResourceClaim taken apart (what is refused, with which message) and
 * NodePrepareResources decided over a hand-made inventory and checkpoint: exclusive and
 * shared pools, idempotence, health and tolerations, several requests on one device,
 * and the per-claim spec's env exactly as the bridge sets it.
 */
#include <errno.h>

#include "cdi.h"
#include "../tap.h"
#include "../tap-error.h"
#include "claims-fixture.h"

#define UID "0b5e3c1a-7f2d-4e6b-9a1c-2d3e4f5a6b7c"
#define UID2 "aa11bb22-0000-4000-8000-000000000002"

static int results(const char *claim_text, const char *uid, struct dra_result **r, size_t *n,
		   char *err, size_t errlen)
{
	cJSON *claim = cJSON_Parse(claim_text);
	int ret;

	if (!claim)
		abort();
	*r = NULL;
	*n = 0;
	ret = ERR_TEXT_N(err, errlen, dra_claim_results(claim, uid, DRIVER, POOL, r, n, &_e));
	cJSON_Delete(claim);
	return ret;
}

/* The claim default/c1 with UID and these results must be refused with r and message. */
static void refused_claim(const char *what, const cJSON *claim, int want_r, const char *want)
{
	struct dra_result *r = (void *)1;
	size_t n = 77;
	char err[512] = "";
	int ret;

	ret = ERR_TEXT(err, dra_claim_results(claim, UID, DRIVER, POOL, &r, &n, &_e));
	if (!ok(ret == want_r, "%s: refused (%d)", what, want_r))
		printf("#   got %d (%s)\n", ret, err);
	EQ_STR(err, want, what);
	ok(r == (void *)1 && n == 77, "%s: out-parameters untouched", what);
}

static void refused(const char *what, const char *text, int want_r, const char *want)
{
	cJSON *claim = cJSON_Parse(text);

	if (!claim)
		abort();
	refused_claim(what, claim, want_r, want);
	cJSON_Delete(claim);
}

static void refused_results(const char *what, const char *res, int want_r, const char *want)
{
	cJSON *claim = claim_parse(UID, res);

	refused_claim(what, claim, want_r, want);
	cJSON_Delete(claim);
}

#define META "\"metadata\":{\"namespace\":\"default\",\"name\":\"c1\",\"uid\":\"" UID "\"}"

static void test_results_refused(void)
{
	char *big;

	refused("not an object", "[1]", -EINVAL, "claim " UID ": not a JSON object");
	refused("no metadata", "{\"status\":{}}", -EINVAL, "claim ?/?: metadata.uid: missing");
	refused("metadata not an object", "{\"metadata\":[]}", -EINVAL,
		"claim ?/?: metadata: not an object");
	refused("uid a number",
		"{\"metadata\":{\"namespace\":\"default\",\"name\":\"c1\",\"uid\":5}}", -EINVAL,
		"claim default/c1: metadata.uid: not a string");
	refused("UID differs",
		"{\"metadata\":{\"namespace\":\"default\",\"name\":\"c1\",\"uid\":\"1234\"}}",
		-EINVAL, "claim default/c1: UID 1234 differs from the kubelet's " UID);
	refused("no status", "{" META "}", -ENOENT, "claim default/c1: is not allocated");
	refused("allocation null", "{" META ",\"status\":{\"allocation\":null}}", -ENOENT,
		"claim default/c1: is not allocated");
	refused("allocation a string", "{" META ",\"status\":{\"allocation\":\"yes\"}}", -EINVAL,
		"claim default/c1: status.allocation: not an object");
	refused("no devices", "{" META ",\"status\":{\"allocation\":{}}}", -ENOENT,
		"claim default/c1: holds no device of driver rdma.example in pool node1");
	refused("results not a list",
		"{" META ",\"status\":{\"allocation\":{\"devices\":{\"results\":{}}}}}", -EINVAL,
		"claim default/c1: status.allocation.devices.results: not a list");
	refused("escaped names",
		"{\"metadata\":{\"namespace\":\"de\\u001bfault\",\"name\":\"c\\nl\",\"uid\":\"" UID
		"\"}}",
		-ENOENT, "claim de\\x1bfault/c\\nl: is not allocated");

	refused_results("other driver",
			"{\"request\":\"r\",\"driver\":\"gpu.example\",\"pool\":\"" POOL
			"\",\"device\":\"pci-0000-3b-00-0\"}",
			-ENOENT,
			"claim default/c1: holds no device of driver rdma.example in pool node1");
	refused_results("other pool",
			"{\"request\":\"r\",\"driver\":\"" DRIVER
			"\",\"pool\":\"node2\",\"device\":\"pci-0000-3b-00-0\"}",
			-ENOENT,
			"claim default/c1: holds no device of driver rdma.example in pool node1");
	refused_results("result not an object", "7", -EINVAL,
			"claim default/c1: status.allocation.devices.results[0]: not an object");
	refused_results("driver missing", "{\"pool\":\"" POOL "\"}", -EINVAL,
			"claim default/c1: status.allocation.devices.results[0].driver: missing");
	refused_results(
	    "device a number",
	    "{\"request\":\"r\",\"driver\":\"" DRIVER "\",\"pool\":\"" POOL "\",\"device\":3}",
	    -EINVAL, "claim default/c1: status.allocation.devices.results[0].device: not a string");
	refused_results(
	    "device empty",
	    "{\"request\":\"r\",\"driver\":\"" DRIVER "\",\"pool\":\"" POOL "\",\"device\":\"\"}",
	    -EINVAL, "claim default/c1: status.allocation.devices.results[0].device: empty");
	refused_results("device too long",
			"{\"request\":\"r\",\"driver\":\"" DRIVER "\",\"pool\":\"" POOL
			"\",\"device\":\"a123456789012345678901234567890123456789012345678901234567"
			"890123\"}",
			-EINVAL,
			"claim default/c1: status.allocation.devices.results[0].device: too long");
	refused_results("device with a slash",
			"{\"request\":\"r\",\"driver\":\"" DRIVER "\",\"pool\":\"" POOL
			"\",\"device\":\"../x\"}",
			-EINVAL,
			"claim default/c1: status.allocation.devices.results[0].device: not a "
			"device name");
	refused_results("request with a space",
			"{\"request\":\"a b\",\"driver\":\"" DRIVER "\",\"pool\":\"" POOL
			"\",\"device\":\"d\"}",
			-EINVAL,
			"claim default/c1: status.allocation.devices.results[0].request: not a "
			"request name");
	/* The API server's rule (a DNS label, or two joined by '/'), not a looser one. */
	refused_results("request not a DNS label",
			"{\"request\":\"Nic_1\",\"driver\":\"" DRIVER "\",\"pool\":\"" POOL
			"\",\"device\":\"d\"}",
			-EINVAL,
			"claim default/c1: status.allocation.devices.results[0].request: not a "
			"request name");
	refused_results("request with an empty subrequest",
			"{\"request\":\"nic/\",\"driver\":\"" DRIVER "\",\"pool\":\"" POOL
			"\",\"device\":\"d\"}",
			-EINVAL,
			"claim default/c1: status.allocation.devices.results[0].request: not a "
			"request name");
	refused_results("adminAccess a string",
			"{\"request\":\"r\",\"driver\":\"" DRIVER "\",\"pool\":\"" POOL
			"\",\"device\":\"d\",\"adminAccess\":\"true\"}",
			-EINVAL,
			"claim default/c1: status.allocation.devices.results[0].adminAccess: not "
			"a boolean");
	{
		/* The share ID goes back to the kubelet and into the checkpoint. */
		static const char *const bad[] = {"../x", "abc def", "1234-abcd\\n", "----", "zz11",
						  "{}",	  ""};
		char long_id[DRA_SHARE_ID_MAX + 2], text[256];

		for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
			char *res;

			snprintf(text, sizeof(text), "\"shareID\":\"%s\"", bad[i]);
			res = result_json("nic", "d", text);
			refused_results(bad[i][0] ? bad[i] : "empty shareID", res, -EINVAL,
					bad[i][0]
					    ? "claim default/c1: status.allocation.devices."
					      "results[0].shareID: not a UUID (hex digits and "
					      "'-')"
					    : "claim default/c1: status.allocation.devices."
					      "results[0].shareID: empty");
			free(res);
		}
		memset(long_id, 'a', sizeof(long_id) - 1);
		long_id[sizeof(long_id) - 1] = '\0';
		snprintf(text, sizeof(text), "\"shareID\":\"%s\"", long_id);
		{
			char *res = result_json("nic", "d", text);

			refused_results("shareID over DRA_SHARE_ID_MAX", res, -EINVAL,
					"claim default/c1: status.allocation.devices.results[0]."
					"shareID: too long");
			free(res);
		}
		{
			char *res = result_json("nic", "d", "\"shareID\":7");

			refused_results("shareID a number", res, -EINVAL,
					"claim default/c1: status.allocation.devices.results[0]."
					"shareID: not a string");
			free(res);
		}
	}
	refused_results("tolerations not a list",
			"{\"request\":\"r\",\"driver\":\"" DRIVER "\",\"pool\":\"" POOL
			"\",\"device\":\"d\",\"tolerations\":{}}",
			-EINVAL,
			"claim default/c1: status.allocation.devices.results[0].tolerations: not "
			"a list");
	refused_results("toleration key a number",
			"{\"request\":\"r\",\"driver\":\"" DRIVER "\",\"pool\":\"" POOL
			"\",\"device\":\"d\",\"tolerations\":[{\"key\":1}]}",
			-EINVAL,
			"claim default/c1: "
			"status.allocation.devices.results[0].tolerations[0].key: not a string");

	/* Bounds: one result over DRA_RESULTS_MAX. */
	{
		size_t one = strlen("{\"request\":\"r\",\"driver\":\"x\",\"pool\":\"y\"},");
		size_t size = (DRA_RESULTS_MAX + 1) * one + 1, off = 0;

		big = malloc(size);
		if (!big)
			abort();
		for (int i = 0; i <= DRA_RESULTS_MAX; i++)
			off +=
			    (size_t)snprintf(big + off, size - off, "%s%s", i ? "," : "",
					     "{\"request\":\"r\",\"driver\":\"x\",\"pool\":\"y\"}");
		refused_results("too many results", big, -EINVAL,
				"claim default/c1: status.allocation.devices.results: more than "
				"256");
		free(big);
	}
	/* A string past its bound is refused, not cut. */
	{
		char request[DRA_CLAIM_STRING_MAX + 2], *res;

		memset(request, 'a', sizeof(request) - 1);
		request[sizeof(request) - 1] = '\0';
		res = result_json(request, "d", NULL);
		refused_results("request too long", res, -EINVAL,
				"claim default/c1: status.allocation.devices.results[0].request: "
				"too long");
		free(res);
	}
}

static void test_results_taken(void)
{
	struct dra_result *r;
	size_t n;
	char err[512];
	int ret;

	ret = results("{" META ",\"status\":{\"allocation\":{\"devices\":{\"results\":["
		      "{\"request\":\"gpu\",\"driver\":\"gpu.example\",\"pool\":\"" POOL
		      "\",\"device\":\"gpu-0\"},"
		      "{\"request\":\"nic\",\"driver\":\"" DRIVER "\",\"pool\":\"" POOL
		      "\",\"device\":\"pci-0000-3b-00-0\",\"adminAccess\":false},"
		      "{\"request\":\"nic\",\"driver\":\"" DRIVER "\",\"pool\":\"node2\","
		      "\"device\":\"pci-0000-5e-00-0\"},"
		      "{\"request\":\"nic/big\",\"driver\":\"" DRIVER "\",\"pool\":\"" POOL
		      "\",\"device\":\"pci-0000-86-00-0\",\"shareID\":\"1234-abcd\","
		      "\"adminAccess\":true},"
		      "{\"request\":\"mon\",\"driver\":\"" DRIVER "\",\"pool\":\"" POOL
		      "\",\"device\":\"pci-0000-5e-00-0\",\"adminAccess\":null,"
		      "\"shareID\":\"9f0e1d2c-3b4a-4c5d-8e6f-7a8b9c0d1e2f\"}]},"
		      "\"config\":[{\"opaque\":{}}]}}}",
		      UID, &r, &n, err, sizeof(err));
	EQ_INT(ret, 0, "a claim with two results of ours among others");
	if (ret < 0) {
		printf("#   %s\n", err);
		return;
	}
	EQ_INT(n, 3, "only our driver's results in our pool");
	EQ_STR(r[0].request, "nic", "first request");
	EQ_STR(r[0].device, "pci-0000-3b-00-0", "first device");
	ok(r[0].share_id == NULL, "no share ID when none");
	EQ_STR(r[1].request, "nic/big", "a subrequest's result");
	EQ_STR(r[1].share_id, "1234-abcd", "share ID");
	ok(!r[0].tolerates_unhealthy && !r[1].tolerates_unhealthy, "no tolerations");
	ok(!r[0].admin_access, "adminAccess false: no admin access");
	ok(r[1].admin_access, "adminAccess true: admin access");
	ok(n == 3 && !r[2].admin_access, "adminAccess null: no admin access");
	if (n == 3)
		EQ_STR(r[2].share_id, "9f0e1d2c-3b4a-4c5d-8e6f-7a8b9c0d1e2f", "a UUID share ID");
	dra_results_free(r, n);
}

/* Whether a result with these tolerations (a JSON list) tolerates the unhealthy taint. */
static void toleration(const char *tols, bool want, const char *what)
{
	struct dra_result *r;
	char extra[512], err[512];
	char *res;
	cJSON *claim;
	size_t n;
	int ret;

	snprintf(extra, sizeof(extra), "\"tolerations\":%s", tols);
	res = result_json("nic", "pci-0000-d8-00-0", extra);
	claim = claim_parse(UID, res);
	ret = ERR_TEXT(err, dra_claim_results(claim, UID, DRIVER, POOL, &r, &n, &_e));
	if (!ok(ret == 0, "%s: taken", what))
		printf("#   %s\n", err);
	else
		ok(r[0].tolerates_unhealthy == want, "%s: %s", what,
		   want ? "tolerates" : "does not tolerate");
	if (ret == 0)
		dra_results_free(r, n);
	cJSON_Delete(claim);
	free(res);
}

static void test_tolerations(void)
{
	toleration("[{\"key\":\"rdma.example/unhealthy\",\"operator\":\"Exists\",\"effect\":"
		   "\"NoSchedule\"}]",
		   true, "key Exists NoSchedule");
	toleration("[{\"key\":\"rdma.example/unhealthy\",\"operator\":\"Exists\"}]", true,
		   "key Exists, every effect");
	toleration("[{\"key\":\"rdma.example/unhealthy\",\"value\":\"port1-down\"}]", true,
		   "key Equal (the default operator) with a value");
	toleration("[{\"operator\":\"Exists\"}]", true, "empty key Exists: every taint");
	toleration("[{\"operator\":\"Equal\",\"value\":\"x\"}]", false, "empty key Equal");
	toleration("[{\"key\":\"rdma.example/unhealthy\",\"operator\":\"Exists\",\"effect\":"
		   "\"NoExecute\"}]",
		   false, "another effect");
	toleration("[{\"key\":\"gpu.example/unhealthy\",\"operator\":\"Exists\"}]", false,
		   "another driver's key");
	toleration("[{\"key\":\"rdma.example/unhealthy\",\"operator\":\"Lt\"}]", false,
		   "an operator we do not know");
	toleration("[{\"key\":\"x\",\"operator\":\"Exists\"},{\"key\":\"rdma.example/"
		   "unhealthy\",\"operator\":\"Exists\"}]",
		   true, "the second of two");
	toleration("[]", false, "an empty list");
}

/* ---- prepare ---------------------------------------------------------------------- */

static struct dra_result res(const char *request, const char *device, bool tolerates)
{
	return (struct dra_result){
	    .request = (char *)request, .device = (char *)device, .tolerates_unhealthy = tolerates};
}

/* The spec's env as one string "A=1|B=2". */
static char *env_of(const cJSON *spec)
{
	const cJSON *devs = cJSON_GetObjectItemCaseSensitive(spec, "devices");
	const cJSON *d0 = cJSON_GetArrayItem(devs, 0);
	const cJSON *edits = cJSON_GetObjectItemCaseSensitive(d0, "containerEdits");
	const cJSON *env = cJSON_GetObjectItemCaseSensitive(edits, "env"), *e;
	static char buf[2048];
	size_t off = 0;

	buf[0] = '\0';
	cJSON_ArrayForEach (e, env)
		off += (size_t)snprintf(buf + off, sizeof(buf) - off, "%s%s", off ? "|" : "",
					cJSON_IsString(e) ? e->valuestring : "?");
	return buf;
}

static struct dra_checkpoint *checkpoint_with(const char *uid, const char *device)
{
	struct dra_checkpoint *c = calloc(1, sizeof(*c));
	struct dra_prepared_claim *p = calloc(1, sizeof(*p));

	if (!c || !p)
		abort();
	p->uid = strdup(uid);
	p->namespace = strdup("other");
	p->name = strdup("c0");
	p->devices = calloc(1, sizeof(*p->devices));
	p->n_devices = 1;
	p->devices[0].device = strdup(device);
	p->devices[0].requests = calloc(1, sizeof(char *));
	p->devices[0].requests[0] = strdup("nic");
	p->devices[0].n_requests = 1;
	p->devices[0].cdi_ids = calloc(1, sizeof(char *));
	p->devices[0].cdi_ids[0] = strdup("rdma.example/hca=x");
	p->devices[0].n_cdi_ids = 1;
	p->spec_file = strdup("rdma.example-claim_" UID2 ".json");
	if (dra_checkpoint_add(c, p) < 0)
		abort();
	return c;
}

static int prepare(const struct fixture *f, const struct dra_checkpoint *c,
		   const struct dra_result *r, size_t n, struct dra_prepared_claim **p,
		   cJSON **spec, char *err, size_t errlen)
{
	*p = (void *)1;
	*spec = (void *)1;
	return ERR_TEXT_N(err, errlen, fix_prepare(f, c, UID, r, n, p, spec, &_e));
}

static void prepare_refused(const struct fixture *f, const struct dra_checkpoint *c,
			    const struct dra_result *r, size_t n, int want_r, const char *want,
			    const char *what)
{
	struct dra_prepared_claim *p;
	char err[512];
	cJSON *spec;
	int ret;

	ret = prepare(f, c, r, n, &p, &spec, err, sizeof(err));
	if (!ok(ret == want_r, "%s: refused (%d)", what, want_r))
		printf("#   got %d (%s)\n", ret, err);
	EQ_STR(err, want, what);
	ok(p == (void *)1 && spec == (void *)1, "%s: out-parameters untouched", what);
	if (ret >= 0) {
		dra_prepared_claim_free(p);
		cJSON_Delete(spec);
	}
}

static void test_prepare_one(const struct fixture *f)
{
	struct dra_result r[] = {res("nic", "pci-0000-3b-00-0", false)};
	struct dra_prepared_claim *p;
	char err[512];
	cJSON *spec;
	int ret;

	ret = prepare(f, NULL, r, 1, &p, &spec, err, sizeof(err));
	EQ_INT(ret, 0, "one exclusive device prepared");
	if (ret < 0) {
		printf("#   %s\n", err);
		return;
	}
	EQ_STR(p->uid, UID, "uid recorded");
	EQ_STR(p->namespace, "default", "namespace recorded");
	EQ_STR(p->name, "c1", "name recorded");
	ok(p->spec_file == NULL, "no spec file before it is written");
	EQ_INT(p->n_devices, 1, "one device");
	EQ_STR(p->devices[0].device, "pci-0000-3b-00-0", "its name");
	EQ_INT(p->devices[0].n_requests, 1, "one request");
	EQ_STR(p->devices[0].requests[0], "nic", "the request");
	EQ_INT(p->devices[0].n_cdi_ids, 2, "two CDI IDs");
	EQ_STR(p->devices[0].cdi_ids[0], "rdma.example/hca=0000:3b:00.0", "the HCA's CDI ID first");
	EQ_STR(p->devices[0].cdi_ids[1], "rdma.example/claim=" UID, "then the claim's");

	EQ_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(spec, "kind")),
	       "rdma.example/claim", "spec kind");
	EQ_STR(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(spec, "cdiVersion")),
	       cdi_min_version(spec), "spec cdiVersion is the lowest it needs");
	EQ_STR(
	    cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
		cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(spec, "devices"), 0), "name")),
	    UID, "spec's one device is named by the UID");
	EQ_INT(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(spec, "devices")), 1,
	       "spec has one device");
	EQ_STR(env_of(spec), "RDMA_CDI_DEVICES=mlx5_2", "env without ncclEnv: the RDMA name only");
	ret = cdi_spec_validate(spec, tap_fresh());
	if (!ok(ret == 0, "spec passes cdi_spec_validate"))
		printf("#   %s\n", tap_msg());
	dra_prepared_claim_free(p);
	cJSON_Delete(spec);
}

static void test_prepare_refused(struct fixture *f)
{
	struct dra_result gone[] = {res("nic", "pci-0000-00-00-0", false)};
	struct dra_result busy[] = {res("nic", "pci-0000-5e-00-0", false)};
	struct dra_result sick[] = {res("nic", "pci-0000-d8-00-0", false)};
	struct dra_result some_sick[] = {res("a", "pci-0000-3b-00-0", true),
					 res("b", "pci-0000-d8-00-0", false)};
	struct dra_checkpoint *c = checkpoint_with(UID2, "pci-0000-5e-00-0");
	struct dra_prepared_claim *p;
	char err[512];
	cJSON *spec;
	int ret;

	prepare_refused(f, NULL, gone, 1, -ENODEV,
			"claim default/c1: device pci-0000-00-00-0 is not on this node (anymore)",
			"unknown device");
	prepare_refused(
	    f, c, busy, 1, -EBUSY,
	    "claim default/c1: device pci-0000-5e-00-0 is already prepared for claim " UID2,
	    "exclusive device of another claim");
	prepare_refused(f, NULL, sick, 1, -EIO,
			"claim default/c1: device pci-0000-d8-00-0 is unhealthy (port 1 DOWN)",
			"unhealthy device");
	prepare_refused(f, NULL, some_sick, 2, -EIO,
			"claim default/c1: device pci-0000-d8-00-0 is unhealthy (port 1 DOWN)",
			"each result tolerates for itself");
	prepare_refused(f, NULL, gone, 0, -EINVAL, "claim default/c1: 0 results (1..256)",
			"no results");

	/* The refusal names the other claim, the device is free once it is unprepared. */
	EQ_INT(dra_checkpoint_remove(c, UID2), 1, "other claim unprepared");
	ret = prepare(f, c, busy, 1, &p, &spec, err, sizeof(err));
	EQ_INT(ret, 0, "then the device may be prepared");
	if (ret >= 0) {
		dra_prepared_claim_free(p);
		cJSON_Delete(spec);
	}

	/* A device unplugged since: the inventory no longer has it. */
	f->inv.n_hcas = 1;
	prepare_refused(f, NULL, busy, 1, -ENODEV,
			"claim default/c1: device pci-0000-5e-00-0 is not on this node (anymore)",
			"device gone from the inventory");
	f->inv.n_hcas = FIX_N;
	dra_checkpoint_free(c);
}

static void test_prepare_bad_args(const struct fixture *f)
{
	struct dra_result r[] = {res("nic", "pci-0000-3b-00-0", false)};
	const char *bad[] = {"../x", "a/b", "a..b", "", "-x", "x y"};
	char long_uid[DRA_UID_MAX + 2];
	struct dra_prepared_claim *p;
	char err[512];
	cJSON *spec;

	struct dra_prepare_input in = {.inv = &f->inv,
				       .driver = "x",
				       .namespace = "default",
				       .name = "c1",
				       .uid = UID,
				       .results = r,
				       .n_results = 1};

	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		int ret = ERR_TEXT(err, fix_prepare(f, NULL, bad[i], r, 1, &p, &spec, &_e));

		EQ_INT(ret, -EINVAL, bad[i][0] ? bad[i] : "empty UID");
	}
	memset(long_uid, 'a', sizeof(long_uid) - 1);
	long_uid[sizeof(long_uid) - 1] = '\0';
	EQ_INT(ERR_TEXT(err, fix_prepare(f, NULL, long_uid, r, 1, &p, &spec, &_e)), -EINVAL,
	       "UID over DRA_UID_MAX");
	EQ_INT(ERR_TEXT(err, dra_prepare(&in, &p, &spec, &_e)), -EINVAL,
	       "a driver that makes no CDI kind");
	EQ_STR(err, "claim default/c1: driver x makes no valid CDI kind", "its message");
}

static void test_shared(const struct fixture *f)
{
	struct dra_result r[] = {res("nic", "pci-0000-af-00-0", false)};
	struct dra_checkpoint *c = checkpoint_with(UID2, "pci-0000-af-00-0");
	struct dra_prepared_claim *p;
	char err[512];
	cJSON *spec;
	int ret;

	ret = prepare(f, c, r, 1, &p, &spec, err, sizeof(err));
	if (!ok(ret == 0, "a shared pool's device held by another claim is prepared"))
		printf("#   %d %s\n", ret, err);
	if (ret >= 0) {
		EQ_STR(p->devices[0].device, "pci-0000-af-00-0", "the shared device");
		dra_prepared_claim_free(p);
		cJSON_Delete(spec);
	}
	dra_checkpoint_free(c);
}

/* Admin access reaches a device another claim holds, and holds nothing itself. */
static void test_admin(const struct fixture *f)
{
	struct dra_result admin[] = {res("mon", "pci-0000-5e-00-0", false)};
	struct dra_result normal[] = {res("nic", "pci-0000-5e-00-0", false)};
	struct dra_result mixed[] = {res("mon", "pci-0000-3b-00-0", false),
				     res("nic", "pci-0000-3b-00-0", false)};
	struct dra_checkpoint *c = checkpoint_with(UID2, "pci-0000-5e-00-0");
	struct dra_prepare_input in;
	struct dra_prepared_claim *p;
	char err[512];
	cJSON *spec;
	int ret;

	admin[0].admin_access = true;
	ret = prepare(f, c, admin, 1, &p, &spec, err, sizeof(err));
	if (!ok(ret == 0, "admin access to an exclusive device another claim holds"))
		printf("#   %d %s\n", ret, err);
	if (ret < 0) {
		dra_checkpoint_free(c);
		return;
	}
	ok(p->devices[0].admin, "the prepared device is marked admin");
	EQ_STR(p->devices[0].cdi_ids[0], "rdma.example/hca=0000:5e:00.0",
	       "with the HCA's CDI ID, as any claim");
	cJSON_Delete(spec);
	p->devices[0].share_id = strdup("abcdef01-2345-4678-89ab-cdef01234567");
	EQ_INT(dra_checkpoint_add(c, p), 0, "the admin claim recorded");
	ret = prepare(f, c, admin, 1, &p, &spec, err, sizeof(err));
	EQ_INT(ret, 1, "prepared again: the recorded answer");
	if (ret == 1) {
		ok(p->devices[0].admin, "still admin");
		EQ_STR(p->devices[0].share_id, "abcdef01-2345-4678-89ab-cdef01234567",
		       "the same share ID");
		dra_prepared_claim_free(p);
	}

	/* The holder goes; the admin claim does not count as holding the device. */
	EQ_INT(dra_checkpoint_remove(c, UID2), 1, "the exclusive claim unprepared");
	ok(dra_checkpoint_holder(c, "pci-0000-5e-00-0", UID2) == NULL,
	   "an admin claim holds no device");
	in = (struct dra_prepare_input){.ckpt = c,
					.inv = &f->inv,
					.driver = DRIVER,
					.namespace = "default",
					.name = "c2",
					.uid = UID2,
					.results = normal,
					.n_results = 1};
	ret = ERR_TEXT(err, dra_prepare(&in, &p, &spec, &_e));
	if (!ok(ret == 0, "a normal claim is not refused because of an admin claim"))
		printf("#   %d %s\n", ret, err);
	if (ret == 0) {
		ok(!p->devices[0].admin, "a normal claim's device is not admin");
		cJSON_Delete(spec);
		EQ_INT(dra_checkpoint_add(c, p), 0, "the normal claim recorded");
		EQ_STR(dra_checkpoint_holder(c, "pci-0000-5e-00-0", UID), UID2,
		       "and it holds the device");
	}
	dra_checkpoint_free(c);

	/* One device, one admin result and one normal one: the device is held. */
	mixed[0].admin_access = true;
	ret = prepare(f, NULL, mixed, 2, &p, &spec, err, sizeof(err));
	EQ_INT(ret, 0, "admin and normal results on one device");
	if (ret == 0) {
		EQ_INT(p->n_devices, 1, "one device");
		ok(!p->devices[0].admin, "held: not every result is admin");
		EQ_INT(p->devices[0].n_requests, 2, "both requests");
		dra_prepared_claim_free(p);
		cJSON_Delete(spec);
	}
}

/* Share IDs are kept per device, and a device with two shares is two devices. */
static void test_share_ids(const struct fixture *f)
{
	struct dra_result r[] = {
	    res("a", "pci-0000-af-00-0", false), res("b", "pci-0000-af-00-0", false),
	    res("c", "pci-0000-af-00-0", false), res("d", "pci-0000-3b-00-0", false)};
	struct dra_prepared_claim *p;
	char err[512];
	cJSON *spec;
	int ret;

	r[0].share_id = (char *)"11111111-2222-4333-8444-555555555555";
	r[1].share_id = (char *)"66666666-7777-4888-9999-aaaaaaaaaaaa";
	r[2].share_id = (char *)"11111111-2222-4333-8444-555555555555";
	ret = prepare(f, NULL, r, ELEMENTSOF(r), &p, &spec, err, sizeof(err));
	EQ_INT(ret, 0, "a shared device with two shares");
	if (ret < 0) {
		printf("#   %s\n", err);
		return;
	}
	EQ_INT(p->n_devices, 3, "one device per share, and the unshared one");
	EQ_STR(p->devices[0].share_id, "11111111-2222-4333-8444-555555555555", "first share");
	EQ_INT(p->devices[0].n_requests, 2, "serves both requests of that share");
	EQ_STR(p->devices[1].share_id, "66666666-7777-4888-9999-aaaaaaaaaaaa", "second share");
	EQ_STR(p->devices[1].device, "pci-0000-af-00-0", "of the same device");
	ok(p->devices[2].share_id == NULL, "no share ID when the result has none");
	EQ_STR(env_of(spec), "RDMA_CDI_DEVICES=mlx5_7,mlx5_2", "each RDMA name once in the env");
	dra_prepared_claim_free(p);
	cJSON_Delete(spec);
}

static void test_idempotent(const struct fixture *f)
{
	struct dra_result r[] = {res("nic", "pci-0000-3b-00-0", false)};
	struct dra_result other[] = {res("x", "pci-0000-00-00-0", false)};
	struct dra_checkpoint c = {0};
	struct dra_prepared_claim *p, *again;
	char err[512];
	cJSON *spec;
	int ret;

	ret = prepare(f, NULL, r, 1, &p, &spec, err, sizeof(err));
	EQ_INT(ret, 0, "first prepare");
	if (ret < 0)
		return;
	cJSON_Delete(spec);
	p->spec_file = strdup("rdma.example-claim_" UID ".json");
	EQ_INT(dra_checkpoint_add(&c, p), 0, "recorded");

	/* The kubelet retries; the claim's results are not looked at again. */
	ret = prepare(f, &c, other, 1, &again, &spec, err, sizeof(err));
	EQ_INT(ret, 1, "second prepare of the same UID: the recorded answer");
	if (ret == 1) {
		ok(spec == NULL, "no new spec");
		ok(again != c.claims, "a copy, not the checkpoint's entry");
		EQ_STR(again->devices[0].cdi_ids[0], "rdma.example/hca=0000:3b:00.0",
		       "same CDI IDs");
		EQ_STR(again->devices[0].cdi_ids[1], "rdma.example/claim=" UID,
		       "same claim CDI ID");
		EQ_STR(again->spec_file, "rdma.example-claim_" UID ".json", "same spec file");
		dra_prepared_claim_free(again);
	}
	/* Its own device is not "held by another claim". */
	ok(dra_checkpoint_holder(&c, "pci-0000-3b-00-0", UID) == NULL,
	   "a claim does not block itself");
	EQ_STR(dra_checkpoint_holder(&c, "pci-0000-3b-00-0", UID2), UID, "but blocks others");
	EQ_INT(dra_checkpoint_remove(&c, UID), 1, "removed");
	EQ_INT(dra_checkpoint_remove(&c, UID), 0, "removing it again: nothing to do");
	free(c.claims);
}

static void test_unhealthy_tolerated(const struct fixture *f)
{
	struct dra_result r[] = {res("nic", "pci-0000-d8-00-0", true)};
	struct dra_prepared_claim *p;
	char err[512];
	cJSON *spec;
	int ret;

	ret = prepare(f, NULL, r, 1, &p, &spec, err, sizeof(err));
	if (!ok(ret == 0, "an unhealthy device is prepared when the result tolerates the taint"))
		printf("#   %d %s\n", ret, err);
	if (ret < 0)
		return;
	EQ_STR(p->devices[0].device, "pci-0000-d8-00-0", "the unhealthy device");
	EQ_STR(env_of(spec), "RDMA_CDI_DEVICES=mlx5_9", "its env");
	dra_prepared_claim_free(p);
	cJSON_Delete(spec);
}

static void test_merge(const struct fixture *f)
{
	struct dra_result r[] = {
	    res("a", "pci-0000-3b-00-0", false), res("b", "pci-0000-af-00-0", false),
	    res("c", "pci-0000-3b-00-0", false), res("a", "pci-0000-3b-00-0", false)};
	struct dra_prepared_claim *p;
	char err[512];
	cJSON *spec;
	int ret;

	ret = prepare(f, NULL, r, ELEMENTSOF(r), &p, &spec, err, sizeof(err));
	EQ_INT(ret, 0, "several requests on one device");
	if (ret < 0) {
		printf("#   %s\n", err);
		return;
	}
	EQ_INT(p->n_devices, 2, "two devices, in the order of the results");
	EQ_STR(p->devices[0].device, "pci-0000-3b-00-0", "first device");
	EQ_INT(p->devices[0].n_requests, 2, "serves two requests (a repeated one once)");
	EQ_STR(p->devices[0].requests[0], "a", "request a");
	EQ_STR(p->devices[0].requests[1], "c", "request c");
	EQ_INT(p->devices[0].n_cdi_ids, 2, "its CDI IDs once");
	EQ_STR(p->devices[1].device, "pci-0000-af-00-0", "second device");
	EQ_INT(p->devices[1].n_requests, 1, "one request");
	EQ_STR(env_of(spec), "RDMA_CDI_DEVICES=mlx5_2,mlx5_7", "each RDMA name once");
	dra_prepared_claim_free(p);
	cJSON_Delete(spec);
}

static void test_nccl_env(const struct fixture *f)
{
	/* mlx5_3 and mlx5_5 are in the ncclEnv pool; mlx5_5 has two ACTIVE ports. */
	struct dra_result r[] = {res("a", "pci-0000-5e-00-0", false),
				 res("b", "pci-0000-86-00-0", false)};
	/* One ncclEnv device makes the env for all of the claim's; mlx5_9 has no ACTIVE
	 * port and is named with its first, as the bridge names it. */
	struct dra_result mixed[] = {res("a", "pci-0000-5e-00-0", false),
				     res("b", "pci-0000-d8-00-0", true)};
	struct dra_prepared_claim *p;
	char err[512];
	cJSON *spec;
	int ret;

	ret = prepare(f, NULL, r, 2, &p, &spec, err, sizeof(err));
	EQ_INT(ret, 0, "ncclEnv claim prepared");
	if (ret < 0)
		return;
	EQ_STR(env_of(spec),
	       "RDMA_CDI_DEVICES=mlx5_3,mlx5_5|NCCL_IB_HCA==mlx5_3,mlx5_5|"
	       "UCX_NET_DEVICES=mlx5_3:1,mlx5_5:1,mlx5_5:2",
	       "ncclEnv: NCCL's exact-match form and every ACTIVE port");
	ret = cdi_spec_validate(spec, tap_fresh());
	ok(ret == 0, "ncclEnv spec valid (%s)", tap_msg());
	dra_prepared_claim_free(p);
	cJSON_Delete(spec);

	ret = prepare(f, NULL, mixed, 2, &p, &spec, err, sizeof(err));
	EQ_INT(ret, 0, "mixed pools prepared");
	if (ret < 0)
		return;
	EQ_STR(env_of(spec),
	       "RDMA_CDI_DEVICES=mlx5_3,mlx5_9|NCCL_IB_HCA==mlx5_3,mlx5_9|"
	       "UCX_NET_DEVICES=mlx5_3:1,mlx5_9:1",
	       "both variables name the same HCAs");
	dra_prepared_claim_free(p);
	cJSON_Delete(spec);
}

int main(void)
{
	struct fixture *f = fix_new();

	test_results_refused();
	test_results_taken();
	test_tolerations();
	test_prepare_one(f);
	test_prepare_refused(f);
	test_prepare_bad_args(f);
	test_shared(f);
	test_admin(f);
	test_share_ids(f);
	test_idempotent(f);
	test_unhealthy_tolerated(f);
	test_merge(f);
	test_nccl_env(f);
	free(f);
	return tap_done();
}
