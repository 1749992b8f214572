/* SPDX-License-Identifier: MIT */
/*
 * scsitgtd's configuration file (docs/scsitgtd.md): INI, lexed by libinih (Debian's libinih,
 * pkg-config "inih"), validated here. The parser is a pure function of the text (no file I/O,
 * no libuv, no libscsitgt calls), so that it can be fuzzed and unit tested alone; the daemon
 * maps the result onto the library (scsitgtd_apply.c).
 */
#ifndef SCSITGTD_CONFIG_H
#define SCSITGTD_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Bounds that keep memory proportional to (and far below) the input. */
#define SCSITGTD_MAX_LINE 4096
#define SCSITGTD_MAX_PORTALS 64
#define SCSITGTD_MAX_TARGETS 256
#define SCSITGTD_MAX_LUNS 1024	     /* per target */
#define SCSITGTD_MAX_INITIATORS 1024 /* per target, also per-initiator CHAP entries */
#define SCSITGTD_MAX_LUN_ID 16383
#define SCSITGTD_MAX_ALUA_GROUPS 32  /* per target, as SCSITGT_ALUA_MAX_GROUPS */
#define SCSITGTD_MAX_ALUA_PORTS 32   /* per group, as SCSITGT_ALUA_MAX_PORTS */
#define SCSITGTD_MAX_ADDRESSES 1024  /* per target: address ranges, per-initiator ones too */
#define SCSITGTD_MAX_SRP 16	     /* SRP target ports per target */
#define SCSITGTD_MAX_SOCKET_PATH 108 /* control_socket: sizeof(sockaddr_un.sun_path) */
#define SCSITGTD_MAX_GW_PEERS 15     /* rbd_gateway_peer: as backend_rbd_gateway.h */
/* The library's largest transfer (lun.h max_transfer_blocks: at most 8 MiB worth of blocks) */
#define SCSITGTD_MAX_XFER_BYTES (8u << 20)

/*
 * The Block Limits VPD page values of a [lun] section (SBC-4 §6.6.4): each is the
 * scsitgt_lun_opts member of the same name and type (lun.h documents them), with the largest
 * value the key takes; 0 (the key left out) keeps the library's default. One list, expanded
 * by the struct below, the parser, the writer, the comparison and scsitgtd_apply.c.
 */
#define SCSITGTD_LUN_LIMITS(X)                                              \
	X(max_transfer_blocks, uint32_t, SCSITGTD_MAX_XFER_BYTES / 512)     \
	X(optimal_transfer_blocks, uint32_t, SCSITGTD_MAX_XFER_BYTES / 512) \
	X(optimal_transfer_granularity, uint32_t, 65535)                    \
	X(max_unmap_blocks, uint32_t, UINT32_MAX)                           \
	X(max_unmap_descriptors, uint32_t, UINT32_MAX)                      \
	X(unmap_granularity, uint32_t, UINT32_MAX)                          \
	X(unmap_granularity_alignment, uint32_t, 0x7fffffff)                \
	X(max_write_same_blocks, uint64_t, UINT32_MAX)
#define SCSITGTD_LUN_LIMIT_FIELD(name, type, max) type name;

enum scsitgtd_backend {
	SCSITGTD_BACKEND_RAM,
	SCSITGTD_BACKEND_NULL,
	SCSITGTD_BACKEND_FILE,	/* a regular file, libaio */
	SCSITGTD_BACKEND_BLOCK, /* a block device, libaio */
	SCSITGTD_BACKEND_RBD,	/* a Ceph RBD image (path POOL/IMAGE), librbd */
};

enum scsitgtd_transport {
	SCSITGTD_TRANSPORT_TCP,
	SCSITGTD_TRANSPORT_ISER,
};

/* LUN flags, as SCSITGT_LUN_* of lun.h (the daemon maps them). */
enum {
	SCSITGTD_LUN_READ_ONLY = 1u << 0,
	SCSITGTD_LUN_THIN = 1u << 1,
	SCSITGTD_LUN_REMOVABLE = 1u << 2,
	SCSITGTD_LUN_WRITE_CACHE = 1u << 3,
	SCSITGTD_LUN_CLAIM_SPC4 = 1u << 4,
};

/* The iSCSI parameters of struct scsitgt_iscsi_params a file may set ([engine], [target]). */
enum scsitgtd_param {
	SCSITGTD_P_MAX_RECV_DATA_SEGMENT_LENGTH,
	SCSITGTD_P_MAX_BURST_LENGTH,
	SCSITGTD_P_FIRST_BURST_LENGTH,
	SCSITGTD_P_IMMEDIATE_DATA,
	SCSITGTD_P_INITIAL_R2T,
	SCSITGTD_P_MAX_OUTSTANDING_R2T,
	SCSITGTD_P_HEADER_DIGEST, /* 0 any, 1 none, 2 crc32c: enum scsitgt_iscsi_digest */
	SCSITGTD_P_DATA_DIGEST,
	SCSITGTD_P_DEFAULT_TIME2WAIT,
	SCSITGTD_P_DEFAULT_TIME2RETAIN,
	SCSITGTD_P_QUEUE_DEPTH,
	SCSITGTD_P_NOP_INTERVAL_MS,
	SCSITGTD_P_NOP_TIMEOUT_MS,
	SCSITGTD_P_LOGIN_TIMEOUT_MS,
	SCSITGTD_P_CHAP_ALGORITHMS, /* SCSITGT_ISCSI_CHAP_* bits */
	SCSITGTD_P_MAX_WRITE_BUFFER,
	SCSITGTD_P_LOGOUT_TIMEOUT_MS,
	SCSITGTD_P_ASYNC_EVENTS, /* SCSITGT_ISCSI_ASYNC_* bits */
	SCSITGTD_P_COUNT
};

/* Parameters given in a section: bit i of @set says v[i] was given. */
struct scsitgtd_params {
	uint32_t set;
	uint64_t v[SCSITGTD_P_COUNT];
};

/* The key naming parameter @p in the file ("max_burst_length"...). */
const char *scsitgtd_param_name(enum scsitgtd_param p);

struct scsitgtd_lun {
	uint64_t id;
	unsigned int line; /* where its section starts, for messages */
	enum scsitgtd_backend backend;
	uint64_t size;	     /* bytes; 0 = backend decides (file, block) */
	uint32_t block_size; /* 0 = default */
	uint32_t flags;	     /* SCSITGTD_LUN_* */
	bool offline;
	bool direct;		  /* file/block: try O_DIRECT (default yes) */
	bool write_through;	  /* file/block: O_DSYNC, no volatile cache */
	uint32_t aio_queue_depth; /* 0 = backend default */
	/* file/block: io_engine = auto|libaio|io_uring (enum scsitgt_backend_aio_engine) */
	uint8_t io_engine;
	/* file/block: uring_async = auto|always|never (enum scsitgt_backend_aio_uring_async) */
	uint8_t uring_async;
	char *path; /* file/block; rbd: POOL/IMAGE */
	/* rbd: namespace, client id, ceph.conf (NULL: defaults), RADOS operation timeout in
	 * seconds (-1: the backend's default) */
	char *rbd_namespace;
	char *rbd_client_id;
	char *rbd_conf;
	int32_t rbd_op_timeout;
	bool rbd_shared_pr; /* reservations in RADOS, shared with every gateway (default) */
	char *vendor;	    /* NULL = library default */
	char *product;
	char *revision;
	char *serial;
	char *pr_file; /* persistent reservations kept in this file; NULL = see pr_dir */
	int16_t physical_block_exponent; /* -1 = what the backend reports */
	/* Block Limits VPD page (scsitgt_lun_opts, SBC-4 §6.6.4); 0 = the library's default */
	SCSITGTD_LUN_LIMITS(SCSITGTD_LUN_LIMIT_FIELD)
	/* VPD 83h designators besides NAA type 5 (SPC-5 §7.7.6); all zeros = none */
	uint8_t naa_extended[16];
	uint8_t uuid[16];
	char **visible_to; /* LUN masking: the initiators that see it; none = every initiator */
	size_t nvisible_to;
	char *fault;		 /* fault injection rules (backend_fault.h spec); NULL = none */
	unsigned int fault_line; /* where they are, for messages */
};

struct scsitgtd_initiator_chap {
	char *initiator;
	char *user;
	char *secret;
};

/* An address range a login must come from, for every initiator (initiator NULL) or one. */
struct scsitgtd_address {
	char *initiator;
	char *cidr;
};

/* An SRP target port of a target (srp.h); 0 / -1 members mean the library's default. */
struct scsitgtd_srp {
	unsigned int line;
	char *address;
	uint16_t port;
	uint64_t id_ext;
	uint64_t ioc_guid;
	uint32_t max_channels;
	uint32_t queue_size;
	uint32_t max_it_iu_len;
	uint32_t max_ti_iu_len;
	int8_t immediate_data; /* -1 default, 0 no, 1 yes */
	int8_t aer;	       /* SRP_AER_REQ for unit attentions: -1 default, 0 no, 1 yes */
	uint16_t rel_port_id;
	uint32_t backlog;
};

struct scsitgtd_alua_group {
	uint16_t id;
	unsigned int line;
	uint8_t state; /* SPC-5 wire value: enum scsitgt_alua_state */
	bool preferred;
	uint16_t *ports; /* relative target port identifiers: portal TPGTs */
	size_t nports;
};

/*
 * rbd_gateway*: the target is one gateway of its RBD LUN's image (backend_rbd_gateway.h;
 * docs/rbd.md, "Several gateways: the HA model"), as minitarget's --alua-group and friends.
 */
struct scsitgtd_gateway {
	uint16_t group;				 /* its target port group; 0: not a gateway */
	uint16_t ports[SCSITGTD_MAX_ALUA_PORTS]; /* portal group tags of its portals; none: group */
	size_t nports;
	uint16_t peer_groups[SCSITGTD_MAX_GW_PEERS]; /* the other gateways' groups */
	uint16_t peer_ports[SCSITGTD_MAX_GW_PEERS];  /* and their ports (0: the group's id) */
	size_t npeers;
	bool preferred;
	int64_t holddown_ms; /* -1: the library's default */
	int64_t probe_ms;    /* -1: the library's default */
	unsigned int line;
};

struct scsitgtd_target {
	char *name;
	unsigned int line;
	char *alias;
	char **initiators;
	size_t ninitiators;
	char *chap_user; /* NULL: no CHAP */
	char *chap_secret;
	char *mutual_user;
	char *mutual_secret;
	struct scsitgtd_initiator_chap *ichap; /* per-initiator CHAP credentials */
	size_t nichap;
	struct scsitgtd_params params; /* its own keys only; over [engine]'s when applied */
	uint32_t alua_modes;	       /* SCSITGT_ALUA_IMPLICIT (1) | SCSITGT_ALUA_EXPLICIT (2) */
	struct scsitgtd_alua_group *groups;
	size_t ngroups;
	struct scsitgtd_lun *luns;
	size_t nluns;
	struct scsitgtd_address *addresses; /* ACL by source address */
	size_t naddresses;
	int64_t max_sessions;	  /* -1 = library default, 0 = no limit */
	int64_t max_lun_commands; /* -1 = library default, 0 = no limit */
	struct scsitgtd_srp *srps;
	size_t nsrps;
	struct scsitgtd_gateway gw;
};

struct scsitgtd_portal {
	enum scsitgtd_transport transport;
	char *address;
	uint16_t port;
	uint16_t tpgt;
	uint32_t backlog;		       /* 0 = library default */
	int64_t max_connections;	       /* -1 = library default, 0 = no limit */
	int64_t max_login_connections;	       /* -1 = library default, 0 = no limit */
	int64_t max_connections_per_initiator; /* -1 = library default, 0 = no limit */
	uint64_t rdma_buffer; /* iSER: registered buffer bytes; 0 = library default */
	unsigned int line;
};

struct scsitgtd_config {
	int log_level;		 /* syslog level 3..7 (enum scsitgt_log_level) */
	uint32_t tmf_timeout_ms; /* 0 = library default */
	char *pr_dir;		 /* LUNs without pr_file keep reservations in this directory */
	char *control_socket;	 /* the management socket's path; NULL = none */
	char *pidfile;		 /* written once ready, locked while running; NULL = none */
	char *metrics_address;	 /* the HTTP metrics listener (numeric); NULL = none */
	uint16_t metrics_port;
	int workers;		   /* engine worker threads: -2 = not given, -1 = auto, 0..256 */
	int conn_workers;	   /* connections on the workers end to end: -1 = not given, 0, 1 */
	uint32_t drain_timeout_ms; /* 0 = library default */
	char *discovery_user;	   /* CHAP required of discovery sessions; NULL = none */
	char *discovery_secret;
	char *discovery_mutual_user; /* the target's answer to mutual CHAP in discovery */
	char *discovery_mutual_secret;
	/* Discovery sessions, logins before the target is known, and the default of every
	 * target's (scsitgtd_params_merge()). */
	struct scsitgtd_params params;
	struct scsitgtd_portal *portals;
	size_t nportals;
	struct scsitgtd_target *targets;
	size_t ntargets;
};

/* Errors listed by one parse; past it they are counted ("and N more errors"). */
#define SCSITGTD_MAX_ERRORS 32

/*
 * Parse @len bytes of configuration text. On success *out receives a new configuration (free
 * it with scsitgtd_config_free()) and 0 is returned. On failure returns -EINVAL (the text is
 * wrong: @err receives "line N: what is wrong", one line per error, as many as fit, in the
 * order of the text; the checks across sections run only on a text without other errors) or
 * -ENOMEM, and *out is NULL. @err may be NULL.
 * Not thread-safe (libinih's settings are process-wide variables).
 */
int scsitgtd_config_parse(const char *text, size_t len, struct scsitgtd_config **out, char *err,
			  size_t err_size);
void scsitgtd_config_free(struct scsitgtd_config *cfg);
/*
 * The checks across sections that scsitgtd_config_parse() runs at the end of a file (one
 * rbd_gateway LUN, portals and SRP ports defined once...), on a configuration edited in memory
 * (the control socket's runtime changes), so that it never serves, or saves, what the file
 * parser refuses. 0, or -EINVAL with @err as the parser's ("line N: what", the line of the
 * section concerned). Fills the same defaults as the parse (alua_modes of a target with groups).
 */
int scsitgtd_config_check(struct scsitgtd_config *cfg, char *err, size_t err_size);
/* Free what a LUN definition points to (the control socket removes LUNs from a copy). */
void scsitgtd_lun_clear(struct scsitgtd_lun *l);
/*
 * A deep copy of @cfg (NULL when out of memory). It copies every pointer member: a member
 * added to these structures must be added here as in scsitgtd_config_free().
 */
struct scsitgtd_config *scsitgtd_config_dup(const struct scsitgtd_config *cfg);

/*
 * Write @cfg to @f as INI text that scsitgtd_config_parse() reads back to the same
 * configuration (scsitgtd_config_write.c). 0, or -1 on a write error (ferror).
 */
int scsitgtd_config_write(const struct scsitgtd_config *cfg, FILE *f);

/* Lookups used by the reload diff. */
const struct scsitgtd_target *scsitgtd_config_find_target(const struct scsitgtd_config *cfg,
							  const char *name);
const struct scsitgtd_lun *scsitgtd_config_find_lun(const struct scsitgtd_target *t, uint64_t id);
const struct scsitgtd_alua_group *scsitgtd_config_find_group(const struct scsitgtd_target *t,
							     uint16_t id);
const struct scsitgtd_initiator_chap *scsitgtd_config_find_ichap(const struct scsitgtd_target *t,
								 const char *initiator);
bool scsitgtd_group_has_port(const struct scsitgtd_alua_group *g, uint16_t port);
const struct scsitgtd_address *scsitgtd_config_find_address(const struct scsitgtd_target *t,
							    const char *initiator,
							    const char *cidr);
bool scsitgtd_lun_visible_to(const struct scsitgtd_lun *l, const char *initiator);
bool scsitgtd_target_masks_luns(const struct scsitgtd_target *t);
bool scsitgtd_srp_equal(const struct scsitgtd_srp *a, const struct scsitgtd_srp *b);
/* Whether two LUN definitions need the LUN re-created (backend, path, block size, identity). */
bool scsitgtd_lun_needs_recreate(const struct scsitgtd_lun *a, const struct scsitgtd_lun *b);
bool scsitgtd_params_equal(const struct scsitgtd_params *a, const struct scsitgtd_params *b);
/* The iSCSI parameters of target @t's logins in @out: each key of @engine ([engine]'s), unless
 * @t gives it too ([target]'s win). A key neither gives stays unset (the library's default). */
void scsitgtd_params_merge(struct scsitgtd_params *out, const struct scsitgtd_params *engine,
			   const struct scsitgtd_params *t);
bool scsitgtd_portal_same(const struct scsitgtd_portal *a, const struct scsitgtd_portal *b);
bool scsitgtd_gateway_equal(const struct scsitgtd_gateway *a, const struct scsitgtd_gateway *b);

#endif /* SCSITGTD_CONFIG_H */
