/* SPDX-License-Identifier: MIT */
/*
 * minitarget's command line: a pure parser from argv to struct minitarget_opts, with no libuv
 * and no library calls, so that tests/unit/minitarget/test_minitarget_opts.c can drive it.
 * minitarget.c turns the parsed options into engine, target, LUN and portal calls.
 */
#ifndef MINITARGET_OPTS_H
#define MINITARGET_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <libscsitgt/scsitgt.h>

/* Most portals, LUNs, initiators, ACL entries and maps of each kind on one command line. */
#define MINITARGET_MAX_ITEMS 32
/* Most --alua-peer options. */
#define MINITARGET_MAX_PEERS 15

enum minitarget_lun_kind {
	MINITARGET_LUN_RAM,
	MINITARGET_LUN_NULL,
	MINITARGET_LUN_FILE,
	MINITARGET_LUN_RBD
};

/* One --lun N:KIND:ARG[,flag...]. */
struct minitarget_lun {
	uint64_t id;
	enum minitarget_lun_kind kind;
	uint64_t size;	/* ram and null */
	char path[200]; /* file: a regular file or a block device; rbd: POOL/IMAGE */
	/* rbd: namespace, client id, ceph.conf, operation timeout, client cache off */
	char rbd_ns[64];
	char rbd_id[64];
	char rbd_conf[200];
	long rbd_timeout; /* -1: the backend's default */
	bool rbd_nocache;
	bool rbd_nopr; /* reservations local to this process instead of shared in RADOS */
	/* prhold (tests only): reservations in a store whose lease ran out (minitarget_prhold.c) */
	bool pr_hold;
	bool bs_given;
	uint32_t bs;
	uint32_t flags; /* SCSITGT_LUN_* */
	uint8_t pbe;	/* logical blocks per physical block exponent */
	/* fault=SPEC: wrap the backend in the fault-injection backend (backend_fault.h). */
	char fault[128];
	/* file: io_engine=auto|libaio|io_uring (enum scsitgt_backend_aio_engine), direct=0|1 */
	int io_engine;
	bool buffered;
	/* file: uring_async=auto|always|never (enum scsitgt_backend_aio_uring_async) */
	int uring_async;
};

/*
 * Everything the command line says. Strings point into argv. A number that is -1 (or a
 * pointer that is NULL) leaves the library's default in place.
 */
struct minitarget_opts {
	const char *iqn;
	bool verbose;
	bool header_digest;
	bool data_digest;
	const char *portals[MINITARGET_MAX_ITEMS];
	size_t nportals;
	/* iSER portals (scsitgt_iser_portal_create(): needs rdma-core and an RDMA device). */
	const char *iser_portals[MINITARGET_MAX_ITEMS];
	size_t niser;
	/* SRP target ports (scsitgt_srp_portal_create()); the GUID names both halves of the
	 * target port identifier (id_ext and ioc_guid). */
	const char *srp_portals[MINITARGET_MAX_ITEMS];
	size_t nsrp;
	uint64_t srp_guid;
	/* --srp-aer: scsitgt_srp_portal_opts.aer of every SRP port (default off). */
	bool srp_aer;
	struct minitarget_lun luns[MINITARGET_MAX_ITEMS];
	size_t nluns;
	const char *chap;
	/* --redirect: every normal login is sent there (Target moved temporarily). */
	const char *redirect;
	const char *mutual_chap;
	const char *discovery_chap;
	const char *discovery_mutual_chap;
	/* CHAP algorithms allowed, SCSITGT_ISCSI_CHAP_* bits; 0: the library's default. */
	uint32_t chap_algs;
	/* Access control: initiator names, source address CIDRs, NAME=CIDR, NAME:LUN maps. */
	const char *initiators[MINITARGET_MAX_ITEMS];
	size_t ninit;
	const char *acl_addrs[MINITARGET_MAX_ITEMS];
	size_t nacl_addrs;
	const char *init_addrs[MINITARGET_MAX_ITEMS];
	size_t ninit_addrs;
	const char *maps[MINITARGET_MAX_ITEMS];
	size_t nmaps;
	/* Persistent reservation state files, "<DIR>/lun<N>.pr" (the default file store). */
	const char *pr_dir;
	/* ALUA: one target port group (id 1, the portals' TPGT 1) in this state (SPC-5 Table 241
	 * value), implicit and explicit; -1: ALUA off. */
	long alua_state;
	/* Portal group tag of the portals; RBD gateway: its group (0: none), peers and timings. */
	long tpgt;
	long alua_group;
	long gw_holddown;
	long gw_probe;
	struct scsitgt_rbd_gateway_peer gw_peers[MINITARGET_MAX_PEERS];
	size_t ngw_peers;
	bool gw_preferred;
	long login_timeout; /* ms */
	long nop_interval;  /* ms; 0: no NOP-In pings */
	long nop_timeout;   /* ms; an unanswered ping closes the connection */
	int workers;	    /* worker threads (engine opts), SCSITGT_ENGINE_WORKERS_AUTO */
	long conn_workers;  /* engine opts conn_workers: 0 or 1; -1: the default */
	/* Limits. */
	long max_sessions;
	long max_lun_cmds;
	long max_init_conns;
	long queue_depth;
	/* Bounded teardown (ms). */
	long drain_timeout;
	long tmf_timeout;
	long logout_timeout;
};

/* What minitarget_opts_parse() found. */
enum minitarget_parse_result {
	MINITARGET_PARSE_RUN = 0,  /* options parsed: run the target */
	MINITARGET_PARSE_HELP = 1, /* -h/--help: print minitarget_usage() to stdout, exit 0 */
	MINITARGET_PARSE_ERROR = 2 /* a bad option, already reported on err: exit 2 */
};

/*
 * Parse argv[1..argc-1] into @o (every field set, defaults first). Without --portal the
 * portal is 127.0.0.1:3260; without --lun, LUN 0 is a 1 GiB RAM disk. A malformed value is
 * reported on @err as "minitarget: bad OPTION 'VALUE'"; an unknown option, one without its
 * value, or one more item than MINITARGET_MAX_ITEMS prints the usage to @err instead.
 */
enum minitarget_parse_result minitarget_opts_parse(struct minitarget_opts *o, int argc, char **argv,
						   FILE *err);

/* The usage text (every option, one summary). */
void minitarget_usage(FILE *f);

/* The value parsers, for the wiring in minitarget.c and for the unit test. Each returns 0 or
 * -1 on malformed input, and writes its outputs only on success unless said otherwise. */

/* "N[K|M|G|T]" (powers of 1024), not 0. */
int minitarget_parse_size(const char *s, uint64_t *out);
/* "N:ram|null:SIZE", "N:file:PATH" or "N:rbd:POOL/IMAGE", then ",flag..." (@l is cleared first). */
int minitarget_parse_lun(const char *arg, struct minitarget_lun *l);
/* "HOST:PORT", "[V6]:PORT" or "HOST" (port 3260). */
int minitarget_parse_portal(const char *arg, char *host, size_t hsize, uint16_t *port);
/* "USER:SECRET", each part shorter than @size. */
int minitarget_split_cred(const char *arg, char *user, char *secret, size_t size);
/* "md5,sha1,sha256,sha3-256" (any subset) to SCSITGT_ISCSI_CHAP_* bits; 0 when malformed. */
uint32_t minitarget_parse_chap_algs(const char *arg);
/* "G" or "G:PORT", each 1..65535. */
int minitarget_parse_peer(const char *arg, struct scsitgt_rbd_gateway_peer *peer);

#endif
