/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kube client on a real sd-event loop against the API-server double (an independent
 * HTTPS stack, tests/dra/apiserver_double.py, started here in standalone mode and steered
 * through its /_double/ endpoints with a plain blocking libcurl handle):
 *   test-kube-client PYTHON apiserver_double.py
 * What the driver relies on: answers and their Status messages, TLS that refuses another
 * CA before a byte of the request leaves, token rotation, timeouts that leave the loop
 * running, bounded answers, watches, cancellation.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "kube-internal.h"
#include "tap.h"

DEFINE_CLEANUP_FUNC(cJSON, cJSON_Delete)

static sd_event *loop;
static pid_t double_pid;
static char url[256], ca[512], other_ca[512], token_file[512], admin_token[128];
static char workdir[] = "/tmp/test-kube-client-XXXXXX";

#define SLICES "/apis/resource.k8s.io/v1/resourceslices"
#define CLAIMS "/apis/resource.k8s.io/v1/namespaces/ns1/resourceclaims/"

/* ---- the double --------------------------------------------------------------- */

static int start_double(const char *python, const char *script)
{
	_cleanup_(cJSON_Deletep) cJSON *j = NULL;
	char line[8192];
	int fds[2];
	FILE *f;

	if (!mkdtemp(workdir) || pipe(fds) < 0)
		return -errno;
	double_pid = fork();
	if (double_pid < 0)
		return -errno;
	if (double_pid == 0) {
		dup2(fds[1], 1);
		close(fds[0]);
		execl(python, python, script, "--dir", workdir, "--token", "tok-1", (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	f = fdopen(fds[0], "r");
	if (!f || !fgets(line, sizeof(line), f))
		return -EIO;
	fclose(f);
	j = cJSON_Parse(line);
#define GETS(dst, key)                                                                             \
	do {                                                                                       \
		const cJSON *v = cJSON_GetObjectItem(j, key);                                      \
		if (!cJSON_IsString(v))                                                            \
			return -EBADMSG;                                                           \
		snprintf(dst, sizeof(dst), "%s", v->valuestring);                                  \
	} while (0)
	GETS(url, "url");
	GETS(ca, "ca");
	GETS(other_ca, "other_ca");
	GETS(token_file, "token_file");
	GETS(admin_token, "admin_token");
#undef GETS
	return 0;
}

static void stop_double(void)
{
	char cmd[600];

	if (double_pid > 0) {
		kill(double_pid, SIGTERM);
		waitpid(double_pid, NULL, 0);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", workdir);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", workdir);
}

struct buf {
	char *p;
	size_t n;
};

static size_t buf_write(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct buf *b = ud;
	char *q = realloc(b->p, b->n + size * nmemb + 1);

	if (!q)
		return 0;
	memcpy(q + b->n, ptr, size * nmemb);
	b->n += size * nmemb;
	q[b->n] = '\0';
	b->p = q;
	return size * nmemb;
}

/* The double's control endpoint, blocking (test harness only, not the code under test). */
static cJSON *admin(const char *method, const char *what, const char *json)
{
	struct curl_slist *h = NULL;
	struct buf b = {0};
	char u[512], auth[200];
	CURL *e = curl_easy_init();
	cJSON *j = NULL;

	snprintf(u, sizeof(u), "%s/_double/%s", url, what);
	snprintf(auth, sizeof(auth), "Authorization: Bearer %s", admin_token);
	h = curl_slist_append(h, auth);
	h = curl_slist_append(h, "Content-Type: application/json");
	curl_easy_setopt(e, CURLOPT_URL, u);
	curl_easy_setopt(e, CURLOPT_CAINFO, ca);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, method);
	if (json)
		curl_easy_setopt(e, CURLOPT_POSTFIELDS, json);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, buf_write);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(e, CURLOPT_TIMEOUT, 10L);
	if (curl_easy_perform(e) == CURLE_OK && b.p)
		j = cJSON_Parse(b.p);
	curl_easy_cleanup(e);
	curl_slist_free_all(h);
	free(b.p);
	if (!j) {
		printf("# admin %s %s failed\n", method, what);
		j = cJSON_CreateObject();
	}
	return j;
}

static void admin_do(const char *method, const char *what, const char *json)
{
	cJSON_Delete(admin(method, what, json));
}

/* The requests the double saw; the last one in *last (owned by the returned tree). */
static cJSON *requests(int *n, const cJSON **last)
{
	cJSON *j = admin("GET", "requests", NULL);
	const cJSON *r = cJSON_GetObjectItem(j, "requests");

	*n = cJSON_GetArraySize(r);
	if (last)
		*last = *n ? cJSON_GetArrayItem(r, *n - 1) : NULL;
	return j;
}

static const char *jstr(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItem(o, key);

	return cJSON_IsString(v) ? v->valuestring : "";
}

/* ---- the loop ----------------------------------------------------------------- */

struct result {
	int count;
	long status;
	char *body, *error;
	size_t len;
	unsigned retry_after;
};

static void on_done(void *userdata, const struct kube_reply *r)
{
	struct result *res = userdata;

	res->count++;
	res->status = r->status;
	free(res->body);
	free(res->error);
	res->body = strdup(r->body);
	res->len = r->len;
	res->error = r->error ? strdup(r->error) : NULL;
	res->retry_after = r->retry_after_sec;
}

static void result_clear(struct result *r)
{
	free(r->body);
	free(r->error);
	*r = (struct result){0};
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static bool run_until(const int *count, int want, unsigned timeout_ms)
{
	uint64_t end = now_ms() + timeout_ms;

	while (*count < want && now_ms() < end)
		sd_event_run(loop, 50 * 1000);
	return *count >= want;
}

static void run_for(unsigned ms)
{
	uint64_t end = now_ms() + ms;

	while (now_ms() < end)
		sd_event_run(loop, 20 * 1000);
}

/* One call, run to its end. */
static void call(struct kube_client *c, const char *method, const char *path, const char *body,
		 unsigned timeout_ms, struct result *res)
{
	int r;

	result_clear(res);
	r = kube_call(c, method, path, body, timeout_ms, on_done, res, NULL);
	if (r < 0) {
		printf("# kube_call %s %s: %d\n", method, path, r);
		return;
	}
	if (!run_until(&res->count, 1, 20000))
		printf("# %s %s: no answer\n", method, path);
}

static struct kube_client *client(const char *ca_file, const char *token, const char *tfile)
{
	struct kube_config cfg = {.server = url,
				  .ca_file = (char *)ca_file,
				  .token = (char *)token,
				  .token_file = (char *)tfile,
				  .source = "test"};
	struct kube_client *c = NULL;

	if (kube_client_new(loop, &cfg, &c) < 0) {
		printf("# kube_client_new failed\n");
		exit(2);
	}
	return c;
}

/* ---- tests -------------------------------------------------------------------- */

#define SLICE                                                                                      \
	"{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceSlice\","                       \
	"\"metadata\":{\"generateName\":\"node1-rdma.example-\"},"                                 \
	"\"spec\":{\"driver\":\"rdma.example\",\"nodeName\":\"%s\","                               \
	"\"pool\":{\"name\":\"%s\",\"generation\":%d,\"resourceSliceCount\":1},"                   \
	"\"devices\":[{\"name\":\"pci-0000-3b-00-0\"}]}}"

static void on_event_any(void *userdata, const char *type, const cJSON *obj)
{
}

static void test_calls(void)
{
	_cleanup_(cJSON_Deletep) cJSON *put = NULL;
	cJSON *j, *reqs;
	struct kube_client *c = client(ca, "tok-1", NULL);
	struct result res = {0};
	const cJSON *last;
	char body[1024], path[512];
	const char *name;
	int n;

	call(c, "GET", SLICES, NULL, 0, &res);
	j = cJSON_Parse(res.body);
	ok(res.status == 200 && !res.error && res.len == strlen(res.body) &&
	       !strcmp(jstr(j, "kind"), "ResourceSliceList"),
	   "GET answers 200 with the JSON body");
	reqs = requests(&n, &last);
	ok(!strcmp(jstr(last, "token"), "tok-1") &&
	       !strcmp(jstr(last, "accept"), "application/json") &&
	       !strncmp(jstr(last, "user_agent"), "rdma-cdi/", 9),
	   "the request carried the bearer token, Accept and the user agent");
	cJSON_Delete(reqs);
	cJSON_Delete(j);

	call(c, "GET", CLAIMS "nope", NULL, 0, &res);
	ok(res.status == 404 && res.error &&
	       !strcmp(res.error, "resourceclaims.resource.k8s.io \"nope\" not found") &&
	       strstr(res.body, "\"kind\": \"Status\""),
	   "404: the error is the server's Status message, the body is the Status");
	printf("#   error: %s\n", res.error ? res.error : "(null)");

	admin_do(
	    "POST", "claims",
	    "{\"namespace\":\"ns1\",\"name\":\"c1\",\"uid\":\"uid-1\",\"results\":[{\"request\":"
	    "\"nic\",\"driver\":\"rdma.example\",\"pool\":\"node1\",\"device\":\"d0\"}]}");
	call(c, "GET", CLAIMS "c1", NULL, 0, &res);
	j = cJSON_Parse(res.body);
	ok(res.status == 200 && !strcmp(jstr(cJSON_GetObjectItem(j, "metadata"), "uid"), "uid-1"),
	   "GET of a claim returns it");
	cJSON_Delete(j);

	snprintf(body, sizeof(body), SLICE, "node1", "node1", 1);
	call(c, "POST", SLICES, body, 0, &res);
	j = cJSON_Parse(res.body);
	name = jstr(cJSON_GetObjectItem(j, "metadata"), "name");
	ok(res.status == 201 && !strncmp(name, "node1-rdma.example-", 19),
	   "POST creates a slice (201, a generated name)");
	reqs = requests(&n, &last);
	ok(!strcmp(jstr(last, "method"), "POST") &&
	       !strcmp(jstr(last, "content_type"), "application/json") &&
	       cJSON_IsObject(cJSON_GetObjectItem(last, "body")),
	   "the POST carried the JSON body with its Content-Type");
	cJSON_Delete(reqs);

	snprintf(path, sizeof(path), SLICES "/%s", name);
	put = cJSON_Duplicate(j, true);
	cJSON_ReplaceItemInObject(cJSON_GetObjectItem(cJSON_GetObjectItem(put, "spec"), "pool"),
				  "generation", cJSON_CreateNumber(2));
	{
		_cleanup_free_ char *text = cJSON_PrintUnformatted(put);

		call(c, "PUT", path, text, 0, &res);
		ok(res.status == 200 && strstr(res.body, "\"generation\": 2"),
		   "PUT with the current resourceVersion updates");
		call(c, "PUT", path, text, 0, &res);
		ok(res.status == 409 && res.error &&
		       strstr(res.error, "the object has been modified"),
		   "PUT with a stale resourceVersion is 409 with the server's message");
	}
	call(c, "DELETE", path, NULL, 0, &res);
	ok(res.status == 200, "DELETE answers 200");
	call(c, "GET", path, NULL, 0, &res);
	ok(res.status == 404, "the deleted slice is gone");
	cJSON_Delete(j);

	call(c, "POST", SLICES, "{\"metadata\":{\"generateName\":\"x-\"},\"spec\":{}}", 0, &res);
	ok(res.status == 422 && res.error && strstr(res.error, "spec.driver: Required value"),
	   "422 carries the validation message");

	admin_do("POST", "fail", "{\"n\":1,\"code\":429,\"retry_after\":7}");
	call(c, "GET", SLICES, NULL, 0, &res);
	ok(res.status == 429 && res.retry_after == 7, "429: Retry-After 7 is reported");
	admin_do("POST", "fail", "{\"n\":1,\"code\":500}");
	call(c, "GET", SLICES, NULL, 0, &res);
	ok(res.status == 500 && res.retry_after == 0 && res.error, "500 without Retry-After: 0");
	admin_do("POST", "fail",
		 "{\"n\":1,\"code\":503,\"retry_after\":\"Thu, 01 Jan 1970 00:00:00 GMT\"}");
	call(c, "GET", SLICES, NULL, 0, &res);
	ok(res.status == 503 && res.retry_after == 0, "a Retry-After date in the past is 0");
	admin_do("POST", "fail", "{\"n\":1,\"code\":502,\"body\":\"<html>bad\\ngateway</html>\"}");
	call(c, "GET", SLICES, NULL, 0, &res);
	ok(res.status == 502 && res.error && strstr(res.error, "HTTP 502: <html>bad") &&
	       !strchr(res.error, '\n'),
	   "a body that is not a Status gives a one-line error");

	snprintf(
	    body, sizeof(body),
	    "{\"n\":1,\"code\":302,\"body\":\"\",\"headers\":{\"Location\":\"%s/apis/elsewhere\"}}",
	    url);
	admin_do("POST", "fail", body);
	call(c, "GET", SLICES, NULL, 0, &res);
	reqs = requests(&n, &last);
	ok(res.status == 302 && strcmp(jstr(last, "path"), "/apis/elsewhere") != 0,
	   "a redirect is not followed");
	cJSON_Delete(reqs);

	ok(kube_call(c, "PATCH", SLICES, "{}", 0, on_done, &res, NULL) == -EINVAL,
	   "an unknown method is refused");
	ok(kube_call(c, "GET", "apis", NULL, 0, on_done, &res, NULL) == -EINVAL,
	   "a path without '/' is refused");
	ok(kube_call(c, "GET", "/a b", NULL, 0, on_done, &res, NULL) == -EINVAL,
	   "a path with a blank is refused");
	ok(kube_call(c, "GET", "/a\r\nX-Evil: 1", NULL, 0, on_done, &res, NULL) == -EINVAL,
	   "a path with CRLF is refused");
	ok(kube_watch(c, SLICES, on_event_any, on_done, &res, NULL) == -EINVAL,
	   "a watch without watch=true is refused");

	result_clear(&res);
	kube_client_free(c);
}

static void test_tls(void)
{
	_cleanup_(cJSON_Deletep) cJSON *before = NULL, *after = NULL;
	_cleanup_free_ char *pem = NULL;
	struct kube_client *c = client(other_ca, "tok-1", NULL);
	struct kube_config cfg = {.server = url, .token = "tok-1"};
	struct result res = {0};
	int n0, n1;
	size_t len;

	before = requests(&n0, NULL);
	call(c, "GET", SLICES, NULL, 0, &res);
	after = requests(&n1, NULL);
	ok(res.status == 0 && res.error && !strncmp(res.error, "TLS: ", 5),
	   "a server whose certificate is not from the CA: status 0, a TLS error");
	printf("#   error: %s\n", res.error ? res.error : "(null)");
	ok(n1 == n0, "... and the server saw no request (no token left the process)");
	ok(cJSON_GetObjectItem(after, "tls_failures")->valueint >
	       cJSON_GetObjectItem(before, "tls_failures")->valueint,
	   "... because the handshake failed");
	kube_client_free(c);

	if (read_full_file_at(AT_FDCWD, ca, 1 << 20, false, &pem, &len) < 0)
		printf("# cannot read %s\n", ca);
	cfg.ca_data = pem;
	cfg.ca_len = len;
	ok(kube_client_new(loop, &cfg, &c) == 0, "a client with CA data");
	call(c, "GET", SLICES, NULL, 0, &res);
	ok(res.status == 200, "the CA given as data verifies the server");
	kube_client_free(c);

	cfg.server = "https://127.0.0.1:1";
	ok(kube_client_new(loop, &cfg, &c) == 0, "a client of a closed port");
	call(c, "GET", SLICES, NULL, 0, &res);
	ok(res.status == 0 && res.error && !strncmp(res.error, "connect: ", 9),
	   "a refused connection: status 0, a connect error");
	kube_client_free(c);

	cfg.server = "http://127.0.0.1:1";
	c = NULL;
	ok(kube_client_new(loop, &cfg, &c) == -EINVAL && !c, "an http:// server is refused");
	result_clear(&res);
}

static void write_in_place(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0 || write_all(fd, text, strlen(text)) < 0)
		printf("# cannot write %s\n", path);
	if (fd >= 0)
		close(fd);
}

static void test_tokens(void)
{
	struct kube_client *c = client(ca, NULL, token_file);
	struct result res = {0};
	const cJSON *last;
	cJSON *reqs;
	struct stat st0, st1;
	int n;

	call(c, "GET", SLICES, NULL, 0, &res);
	reqs = requests(&n, &last);
	ok(res.status == 200 && !strcmp(jstr(last, "token"), "tok-1"),
	   "the token is read from the token file");
	cJSON_Delete(reqs);

	admin_do("POST", "token", "{\"token\":\"tok-2\"}"); /* the file is replaced */
	call(c, "GET", SLICES, NULL, 0, &res);
	reqs = requests(&n, &last);
	ok(res.status == 200 && !strcmp(jstr(last, "token"), "tok-2"),
	   "a rotated token file (new inode): the next request carries the new token");
	cJSON_Delete(reqs);

	stat(token_file, &st0);
	admin_do("POST", "token", "{\"token\":\"tok-3\",\"write_file\":false}");
	write_in_place(token_file, "  tok-3\n\n");
	stat(token_file, &st1);
	call(c, "GET", SLICES, NULL, 0, &res);
	reqs = requests(&n, &last);
	ok(st0.st_ino == st1.st_ino && res.status == 200 && !strcmp(jstr(last, "token"), "tok-3"),
	   "a token file rewritten in place is read again (and trimmed)");
	cJSON_Delete(reqs);

	unlink(token_file);
	call(c, "GET", SLICES, NULL, 0, &res);
	ok(res.status == 200, "a token file that is gone for a moment: the last token is used");
	write_in_place(token_file, "");
	admin_do("POST", "token", "{\"token\":\"tok-3\",\"write_file\":true}");
	kube_client_free(c);

	unlink(token_file);
	c = client(ca, NULL, token_file);
	call(c, "GET", SLICES, NULL, 0, &res);
	ok(res.status == 0 && res.error && strstr(res.error, "token file") &&
	       strstr(res.error, "No such file"),
	   "no token at all: the call fails on the loop with the reason");
	kube_client_free(c);
	admin_do("POST", "token", "{\"token\":\"tok-3\"}");

	c = client(ca, "wrong", NULL);
	call(c, "GET", SLICES, NULL, 0, &res);
	ok(res.status == 401 && res.error && !strcmp(res.error, "Unauthorized"),
	   "a wrong token: 401 Unauthorized");
	kube_client_free(c);
	result_clear(&res);
}

static int ticks;

static int on_tick(sd_event_source *s, uint64_t usec, void *userdata)
{
	ticks++;
	sd_event_source_set_time_relative(s, 50 * 1000);
	return 0;
}

static struct {
	struct kube_client *c;
	int count;
} free_in_cb;

static void free_client_cb(void *userdata, const struct kube_reply *r)
{
	free_in_cb.count++;
	kube_client_free(free_in_cb.c);
}

static void test_timeouts(void)
{
	struct kube_client *c = client(ca, "tok-3", NULL);
	struct result res = {0}, res2 = {0};
	sd_event_source *tick = NULL;
	struct kube_call *k = NULL;
	uint64_t t0;

	sd_event_add_time_relative(loop, &tick, CLOCK_MONOTONIC, 50 * 1000, 1000, on_tick, NULL);
	sd_event_source_set_enabled(tick, SD_EVENT_ON);
	admin_do("POST", "stall", "{\"seconds\":5,\"n\":1,\"path_prefix\":\"" CLAIMS "\"}");
	ticks = 0;
	t0 = now_ms();
	call(c, "GET", CLAIMS "c1", NULL, 600, &res);
	ok(res.status == 0 && res.error && !strcmp(res.error, "timed out after 600 ms"),
	   "a stalled server: status 0, \"timed out after 600 ms\"");
	printf("#   error: %s; %u ms, %d ticks\n", res.error ? res.error : "(null)",
	       (unsigned)(now_ms() - t0), ticks);
	ok(now_ms() - t0 >= 550 && now_ms() - t0 < 3000, "... after about 600 ms");
	ok(ticks >= 8, "... while a 50 ms loop timer kept firing (the loop was not blocked)");
	sd_event_source_disable_unref(tick);

	/* Cancel before the answer: the callback never runs. */
	result_clear(&res);
	ok(kube_call(c, "GET", SLICES, NULL, 0, on_done, &res, &k) == 0, "a call to cancel");
	kube_call_cancel(k);
	run_for(300);
	ok(res.count == 0, "a cancelled call's callback does not run");
	call(c, "GET", SLICES, NULL, 0, &res);
	ok(res.status == 200, "the client works after a cancel");

	/* Freed with a call in flight (stalled): nothing runs, nothing leaks. */
	admin_do("POST", "stall", "{\"seconds\":2,\"n\":1,\"path_prefix\":\"" CLAIMS "\"}");
	result_clear(&res);
	kube_call(c, "GET", CLAIMS "c1", NULL, 0, on_done, &res, NULL);
	run_for(200);
	kube_client_free(c);
	run_for(200);
	ok(res.count == 0, "freeing the client cancels its calls silently");

	/* Freed from inside a callback, with another call in flight. */
	c = client(ca, "tok-3", NULL);
	result_clear(&res);
	admin_do("POST", "stall", "{\"seconds\":2,\"n\":1,\"path_prefix\":\"" CLAIMS "\"}");
	kube_call(c, "GET", CLAIMS "c1", NULL, 0, on_done, &res2, NULL);
	run_for(200);
	free_in_cb.c = c;
	free_in_cb.count = 0;
	kube_call(c, "GET", SLICES, NULL, 0, free_client_cb, &free_in_cb, NULL);
	run_until(&free_in_cb.count, 1, 5000);
	run_for(300);
	ok(free_in_cb.count == 1 && res2.count == 0,
	   "a client freed in a callback: the other call is cancelled silently");
	result_clear(&res);
	result_clear(&res2);
}

static void test_limits(void)
{
	struct kube_client *c = client(ca, "tok-3", NULL);
	struct result res = {0};
	char arg[256];

	snprintf(arg, sizeof(arg), "{\"n\":1,\"code\":200,\"body_size\":%u}", KUBE_BODY_MAX + 1);
	admin_do("POST", "fail", arg);
	call(c, "GET", SLICES, NULL, 0, &res);
	ok(res.status == 0 && res.error && strstr(res.error, "answer larger than 16777216 bytes"),
	   "an answer over KUBE_BODY_MAX (Content-Length) is refused");
	printf("#   error: %s\n", res.error ? res.error : "(null)");
	snprintf(arg, sizeof(arg), "{\"n\":1,\"code\":200,\"body_size\":%u,\"chunked\":true}",
		 KUBE_BODY_MAX + 1);
	admin_do("POST", "fail", arg);
	call(c, "GET", SLICES, NULL, 0, &res);
	ok(res.status == 0 && res.error && strstr(res.error, "answer larger than 16777216 bytes"),
	   "an answer over KUBE_BODY_MAX (chunked) is refused");
	snprintf(arg, sizeof(arg), "{\"n\":1,\"code\":200,\"body_size\":%u,\"chunked\":true}",
		 KUBE_BODY_MAX);
	admin_do("POST", "fail", arg);
	call(c, "GET", SLICES, NULL, 0, &res);
	ok(res.status == 200 && res.len == KUBE_BODY_MAX, "an answer of exactly KUBE_BODY_MAX is "
							  "accepted");
	result_clear(&res);
	kube_client_free(c);
}

struct watch {
	int events, ends;
	char types[8][16];
	char names[8][64];
	struct kube_reply end;
	char error[512];
};

static void on_event(void *userdata, const char *type, const cJSON *obj)
{
	struct watch *w = userdata;

	if (w->events < 8) {
		snprintf(w->types[w->events], sizeof(w->types[0]), "%s", type);
		snprintf(w->names[w->events], sizeof(w->names[0]), "%s",
			 jstr(cJSON_GetObjectItem(obj, "metadata"), "name"));
	}
	w->events++;
}

static void on_end(void *userdata, const struct kube_reply *r)
{
	struct watch *w = userdata;

	w->ends++;
	w->end = *r;
	snprintf(w->error, sizeof(w->error), "%s", r->error ? r->error : "");
	w->end.error = r->error ? w->error : NULL;
	w->end.body = "";
}

static struct kube_call *watch_self;

static void cancel_on_event(void *userdata, const char *type, const cJSON *obj)
{
	on_event(userdata, type, obj);
	kube_call_cancel(watch_self);
}

static void test_watch(void)
{
	struct kube_client *c = client(ca, "tok-3", NULL);
	struct result res = {0};
	struct watch w = {0};
	char path[512], body[1024], arg[256];
	_cleanup_(cJSON_Deletep) cJSON *list = NULL, *s1 = NULL;
	const char *rv, *name;

	call(c, "GET", SLICES, NULL, 0, &res);
	list = cJSON_Parse(res.body);
	rv = jstr(cJSON_GetObjectItem(list, "metadata"), "resourceVersion");
	snprintf(path, sizeof(path),
		 SLICES "?watch=true&resourceVersion=%s&fieldSelector=spec.nodeName%%3Dnode7", rv);
	ok(kube_watch(c, path, on_event, on_end, &w, NULL) == 0, "a watch starts");
	run_for(300);
	snprintf(body, sizeof(body), SLICE, "node7", "node7", 1);
	call(c, "POST", SLICES, body, 0, &res);
	s1 = cJSON_Parse(res.body);
	name = jstr(cJSON_GetObjectItem(s1, "metadata"), "name");
	snprintf(body, sizeof(body), SLICE, "node8", "node8", 1);
	call(c, "POST", SLICES, body, 0, &res);
	run_until(&w.events, 1, 5000);
	cJSON_ReplaceItemInObject(cJSON_GetObjectItem(cJSON_GetObjectItem(s1, "spec"), "pool"),
				  "generation", cJSON_CreateNumber(5));
	{
		_cleanup_free_ char *text = cJSON_PrintUnformatted(s1);
		char p2[512];

		snprintf(p2, sizeof(p2), SLICES "/%s", name);
		call(c, "PUT", p2, text, 0, &res);
	}
	run_until(&w.events, 2, 5000);
	ok(w.events == 2 && !strcmp(w.types[0], "ADDED") && !strcmp(w.types[1], "MODIFIED") &&
	       !strcmp(w.names[0], name) && !strcmp(w.names[1], name) && w.ends == 0,
	   "watch events are delivered (ADDED, MODIFIED of this node's slice only)");
	admin_do("POST", "close-watches", NULL);
	run_until(&w.ends, 1, 5000);
	ok(w.ends == 1 && w.end.status == 200 && !w.end.error && w.events == 2,
	   "the server closing the stream runs end once (status 200, no error)");

	/* A line that is not an event ends the stream with the reason. */
	w = (struct watch){0};
	admin_do("POST", "fail",
		 "{\"n\":1,\"code\":200,\"method\":\"GET\",\"path_prefix\":\"" SLICES "\","
		 "\"body\":\"{\\\"type\\\":\\\"ADDED\\\",\\\"object\\\":{}}\\nnot json\\n\","
		 "\"chunked\":true}");
	kube_watch(c, path, on_event, on_end, &w, NULL);
	run_until(&w.ends, 1, 5000);
	ok(w.events == 1 && w.ends == 1 && w.end.status == 0 && strstr(w.error, "not JSON"),
	   "an event that is not JSON ends the watch: status 0 and the reason");
	printf("#   error: %s\n", w.error);

	w = (struct watch){0};
	snprintf(arg, sizeof(arg),
		 "{\"n\":1,\"code\":200,\"method\":\"GET\",\"body_size\":%u,\"chunked\":true}",
		 KUBE_BODY_MAX + 10);
	admin_do("POST", "fail", arg);
	kube_watch(c, path, on_event, on_end, &w, NULL);
	run_until(&w.ends, 1, 10000);
	ok(w.events == 0 && w.ends == 1 && w.end.status == 0 &&
	       strstr(w.error, "watch event larger than 16777216 bytes"),
	   "an event over KUBE_BODY_MAX ends the watch");
	printf("#   events %d ends %d status %ld error: %s\n", w.events, w.ends, w.end.status,
	       w.error);

	w = (struct watch){0};
	admin_do(
	    "POST", "fail",
	    "{\"n\":1,\"code\":410,\"method\":\"GET\",\"message\":\"too old resource version\"}");
	kube_watch(c, path, on_event, on_end, &w, NULL);
	run_until(&w.ends, 1, 5000);
	ok(w.events == 0 && w.ends == 1 && w.end.status == 410 &&
	       !strcmp(w.error, "too old resource version"),
	   "a watch refused with 410: end has the status and the message");

	/* Cancel an open watch from its own event callback. */
	w = (struct watch){0};
	result_clear(&res);
	snprintf(path, sizeof(path), SLICES "?watch=true&fieldSelector=spec.nodeName%%3Dnode7");
	kube_watch(c, path, cancel_on_event, on_end, &w, &watch_self);
	run_for(1000);
	ok(w.events == 1 && w.ends == 0,
	   "a watch cancelled from its event callback: no more events, no end");
	result_clear(&res);
	kube_client_free(c);
}

static void test_escape(void)
{
	_cleanup_free_ char *e = kube_escape("spec.driver=rdma.example,spec.nodeName=n 1/ü~");

	EQ_STR(e, "spec.driver%3Drdma.example%2Cspec.nodeName%3Dn%201%2F%C3%BC~",
	       "kube_escape encodes everything but unreserved characters");
}

int main(int argc, char **argv)
{
	int r;

	if (argc != 3) {
		fprintf(stderr, "usage: %s PYTHON apiserver_double.py\n", argv[0]);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	r = start_double(argv[1], argv[2]);
	if (r < 0) {
		printf("Bail out! the API-server double did not start: %s\n", strerror(-r));
		stop_double();
		return 1;
	}
	sd_event_default(&loop);
	test_escape();
	test_calls();
	test_tls();
	test_tokens();
	test_timeouts();
	test_limits();
	test_watch();
	sd_event_unref(loop);
	stop_double();
	curl_global_cleanup();
	return tap_done();
}
