/* SPDX-License-Identifier: MIT */
/*
 * scsitgtctl: drive a running scsitgtd through its control socket (docs/scsitgtd.md).
 *
 *   scsitgtctl [-s PATH] VERB [ARGS]
 *
 * It sends one JSON-RPC 2.0 request (one line), reads the one-line answer and prints its
 * result as indented JSON on stdout; an error object goes to stderr and the exit status is 1
 * (2: usage, 3: no daemon at PATH or a broken answer).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <json-c/json.h>

#include "scsitgtd_prom.h"

#define DEFAULT_SOCKET "/run/scsitgtd/control.sock" /* examples/scsitgtd.service */
#define MAX_ANSWER (64u << 20)

static void usage(void)
{
	fprintf(stderr,
		"usage: scsitgtctl [-s PATH] VERB [ARGS]\n"
		"  show                          targets, LUNs, ACLs, portals, sessions\n"
		"  stats                         counters of LUNs, sessions, connections\n"
		"  metrics                       the counters in Prometheus text format\n"
		"  kick TARGET INITIATOR_PORT    end a session (the initiator may log in again)\n"
		"  reload                        re-read the configuration file (as SIGHUP)\n"
		"  add-lun TARGET ID KEY=VALUE...  a LUN, keys as in a [lun] section\n"
		"  remove-lun TARGET ID\n"
		"  add-initiator TARGET NAME     remove-initiator TARGET NAME\n"
		"  add-address TARGET CIDR [INITIATOR]   remove-address TARGET CIDR [INITIATOR]\n"
		"  save FILE                     write the running configuration to FILE\n"
		"PATH defaults to %s.\n",
		DEFAULT_SOCKET);
	exit(2);
}

static void die(const char *fmt, const char *arg)
{
	fprintf(stderr, "scsitgtctl: ");
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	exit(3);
}

/* Send @req on the socket at @path; returns the parsed answer. */
static json_object *call(const char *path, json_object *req)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *text = json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN);
	size_t n = strlen(text), cap = 4096, len = 0;
	char *buf = malloc(cap), *nl = NULL;
	json_object *resp;
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path))
		die("%s: path too long", path);
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("%s: cannot connect (is scsitgtd running with control_socket?)", path);
	for (size_t off = 0; off <= n;) {
		/* The request, then its newline. */
		ssize_t w = off < n ? write(fd, text + off, n - off) : write(fd, "\n", 1);

		if (w <= 0)
			die("%s: write failed", path);
		off += (size_t)w;
	}
	while (buf && nl == NULL) {
		ssize_t r;

		if (len == cap) {
			if (cap >= MAX_ANSWER)
				die("%s: answer too long", path);
			cap *= 2;
			buf = realloc(buf, cap);
			if (buf == NULL)
				break;
		}
		r = read(fd, buf + len, cap - len);
		if (r <= 0)
			die("%s: the daemon closed the connection without an answer", path);
		nl = memchr(buf + len, '\n', (size_t)r);
		len += (size_t)r;
	}
	if (buf == NULL)
		die("%s", "out of memory");
	close(fd);
	*nl = '\0';
	resp = json_tokener_parse(buf);
	if (resp == NULL)
		die("%s: the answer is not JSON", path);
	free(buf);
	return resp;
}

/* ---- verbs ---- */

static json_object *target_params(int argc, char **argv, int need)
{
	json_object *p = json_object_new_object();

	if (argc < need)
		usage();
	json_object_object_add(p, "target", json_object_new_string(argv[1]));
	return p;
}

int main(int argc, char **argv)
{
	const char *path = getenv("SCSITGTD_SOCKET") ? getenv("SCSITGTD_SOCKET") : DEFAULT_SOCKET;
	const char *verb, *method;
	json_object *req, *resp, *params = NULL, *v;
	bool is_metrics = false;
	char *file;
	int rc = 0;

	if (argc >= 3 && !strcmp(argv[1], "-s")) {
		path = argv[2];
		argc -= 2;
		argv += 2;
	}
	if (argc < 2)
		usage();
	argc--;
	argv++;
	verb = argv[0];
	method = verb;
	if (!strcmp(verb, "show") || !strcmp(verb, "stats") || !strcmp(verb, "reload")) {
		if (argc != 1)
			usage();
	} else if (!strcmp(verb, "metrics")) {
		if (argc != 1)
			usage();
		method = "stats";
		is_metrics = true;
	} else if (!strcmp(verb, "kick")) {
		if (argc != 3)
			usage();
		params = target_params(argc, argv, 3);
		json_object_object_add(params, "initiator_port", json_object_new_string(argv[2]));
	} else if (!strcmp(verb, "add-lun") || !strcmp(verb, "remove-lun")) {
		char *end;
		unsigned long long id;

		if (argc < 3 || (!strcmp(verb, "remove-lun") && argc != 3))
			usage();
		params = target_params(argc, argv, 3);
		errno = 0;
		id = strtoull(argv[2], &end, 10);
		if (errno || *end || argv[2][0] == '\0' || argv[2][0] == '-')
			usage();
		json_object_object_add(params, "id", json_object_new_uint64(id));
		method = verb[0] == 'a' ? "add_lun" : "remove_lun";
		for (int i = 3; i < argc; i++) {
			/* KEY=VALUE: the keys of a [lun] section (docs/scsitgtd.md). */
			char *eq = strchr(argv[i], '=');

			if (eq == NULL || eq == argv[i])
				usage();
			*eq = '\0';
			json_object_object_add(params, argv[i], json_object_new_string(eq + 1));
		}
	} else if (!strcmp(verb, "add-initiator") || !strcmp(verb, "remove-initiator")) {
		if (argc != 3)
			usage();
		params = target_params(argc, argv, 3);
		json_object_object_add(params, "initiator", json_object_new_string(argv[2]));
		method = verb[0] == 'a' ? "add_initiator" : "remove_initiator";
	} else if (!strcmp(verb, "add-address") || !strcmp(verb, "remove-address")) {
		if (argc != 3 && argc != 4)
			usage();
		params = target_params(argc, argv, 3);
		json_object_object_add(params, "cidr", json_object_new_string(argv[2]));
		if (argc == 4)
			json_object_object_add(params, "initiator",
					       json_object_new_string(argv[3]));
		method = verb[0] == 'a' ? "add_address" : "remove_address";
	} else if (!strcmp(verb, "save")) {
		if (argc != 2)
			usage();
		method = "save";
		/* The daemon resolves paths in its own directory: send an absolute one. */
		file = realpath(argv[1], NULL);
		if (file == NULL) {
			char *dir = strdup(argv[1]), *slash = strrchr(dir, '/'), *rdir;

			if (slash == dir)
				rdir = strdup("/");
			else
				rdir = realpath(slash ? (*slash = '\0', dir) : ".", NULL);
			if (rdir == NULL)
				die("%s: no such directory", argv[1]);
			if (asprintf(&file, "%s/%s", strcmp(rdir, "/") ? rdir : "",
				     slash ? strrchr(argv[1], '/') + 1 : argv[1]) < 0)
				die("%s", "out of memory");
			free(rdir);
			free(dir);
		}
		params = json_object_new_object();
		json_object_object_add(params, "file", json_object_new_string(file));
		free(file);
	} else {
		usage();
	}
	req = json_object_new_object();
	json_object_object_add(req, "jsonrpc", json_object_new_string("2.0"));
	json_object_object_add(req, "method", json_object_new_string(method));
	if (params)
		json_object_object_add(req, "params", params);
	json_object_object_add(req, "id", json_object_new_int(1));
	resp = call(path, req);
	if (json_object_object_get_ex(resp, "error", &v)) {
		fprintf(stderr, "%s\n",
			json_object_to_json_string_ext(v, JSON_C_TO_STRING_PRETTY |
								  JSON_C_TO_STRING_SPACED));
		rc = 1;
	} else if (!json_object_object_get_ex(resp, "result", &v)) {
		die("%s: an answer with neither result nor error", path);
	} else if (is_metrics) {
		scsitgtd_prom_write(v, stdout);
	} else {
		printf("%s\n", json_object_to_json_string_ext(
				       v, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
						  JSON_C_TO_STRING_NOSLASHESCAPE));
	}
	json_object_put(req);
	json_object_put(resp);
	return rc;
}
