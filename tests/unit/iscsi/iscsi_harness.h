/* SPDX-License-Identifier: MIT */
/*
 * In-process harness for the iSCSI transport: a real engine, target and LUN on a private uv
 * loop, and one connection whose data mover is fake. Bytes fed to the connection go through
 * the real receive path; what the target sends is collected and parsed back into PDUs.
 * Shared by the unit tests and the fuzz targets (header-only on purpose: the fuzz build lists
 * one source file per target).
 */
#ifndef SCSITGT_TEST_ISCSI_HARNESS_H
#define SCSITGT_TEST_ISCSI_HARNESS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/iscsi/conn.h"

#define H_TARGET "iqn.2026-11.org.libscsitgt:test"
#define H_INITIATOR "iqn.2026-11.org.libscsitgt:initiator"
#define H_MAX_TX 4096
#define H_MAX_PDUS 4096

struct h_pdu {
	uint8_t bhs[ISCSI_BHS_LEN];
	uint8_t *data;
	uint32_t len;
};

struct harness {
	uv_loop_t loop;
	struct scsitgt_engine *engine;
	struct scsitgt_target *tgt;
	struct scsitgt_portal portal;
	struct scsitgt__iscsi_conn *conn;
	/* Output of the target. */
	struct scsitgt__iscsi_tx *txq[H_MAX_TX];
	unsigned int ntx;
	bool close_requested;
	bool dm_closed_sent;
	/* Parsed output. */
	struct scsitgt__iscsi_rx out_rx;
	struct h_pdu pdus[H_MAX_PDUS];
	unsigned int npdus;
	unsigned int next; /* first PDU not yet taken by h_take() */
	/* Initiator-side sequence numbers. */
	uint32_t cmd_sn;
	uint32_t itt;
};

static inline struct harness *h_of(struct scsitgt__iscsi_conn *conn)
{
	return conn->dm_ctx;
}

static inline int h_out_header(void *arg, struct scsitgt__iscsi_pdu *pdu)
{
	(void)arg;
	(void)pdu;
	return 0;
}

static inline int h_out_pdu(void *arg, struct scsitgt__iscsi_pdu *pdu)
{
	struct harness *h = arg;
	struct h_pdu *p;

	if (h->npdus == H_MAX_PDUS)
		return 0;
	p = &h->pdus[h->npdus++];
	memcpy(p->bhs, pdu->bhs, ISCSI_BHS_LEN);
	p->len = pdu->data_len;
	p->data = NULL;
	if (pdu->data_len) {
		p->data = malloc(pdu->data_len);
		if (p->data)
			memcpy(p->data, pdu->data, pdu->data_len);
	}
	return 0;
}

static const struct scsitgt__iscsi_rx_ops h_out_ops = { h_out_header, h_out_pdu };

static inline void h_xmit(struct scsitgt__iscsi_conn *conn, struct scsitgt__iscsi_tx *tx)
{
	struct harness *h = h_of(conn);

	/* What the target writes goes through the same PDU parser, digests included. */
	h->out_rx.header_digest = conn->header_digest;
	h->out_rx.data_digest = conn->data_digest;
	for (int i = 0; i < tx->iovcnt; i++)
		scsitgt__iscsi_rx_feed(&h->out_rx, tx->iov[i].iov_base, tx->iov[i].iov_len);
	if (h->ntx < H_MAX_TX)
		h->txq[h->ntx++] = tx;
	else
		scsitgt__iscsi_conn_tx_complete(conn, tx, 0);
}

static inline void h_close(struct scsitgt__iscsi_conn *conn)
{
	h_of(conn)->close_requested = true;
}

static const struct scsitgt__iscsi_dm_ops h_dm_ops = {
	.name = "harness",
	.xmit = h_xmit,
	.close = h_close,
};

/* Finish queued writes, let a closing connection go, run the loop's pending callbacks. */
static inline void h_pump(struct harness *h)
{
	for (int round = 0; round < 8; round++) {
		while (h->ntx) {
			struct scsitgt__iscsi_tx *tx = h->txq[0];

			memmove(&h->txq[0], &h->txq[1], (h->ntx - 1) * sizeof(h->txq[0]));
			h->ntx--;
			scsitgt__iscsi_conn_tx_complete(h->conn, tx,
							h->close_requested ? -ECANCELED : 0);
		}
		if (h->close_requested && !h->dm_closed_sent) {
			h->dm_closed_sent = true;
			scsitgt__iscsi_conn_dm_closed(h->conn);
		}
		uv_run(&h->loop, UV_RUN_NOWAIT);
	}
}

static inline bool h_conn_gone(const struct harness *h)
{
	return h->portal.nconns == 0;
}

/* h_init() with the connection on data mover @dm (its xmit and close: h_xmit, h_close). */
/* A RAM LUN @id of @blocks 512-byte blocks in @tgt. 0 or -1. */
static inline int h_ram_lun(struct scsitgt_target *tgt, uint64_t id, uint64_t blocks)
{
	struct scsitgt_lun_opts lo;
	struct scsitgt_lun *lun;
	void *bctx;

	if (scsitgt_backend_ram_create(&bctx) != 0)
		return -1;
	scsitgt_lun_opts_init(&lo, sizeof(lo));
	lo.id = id;
	lo.block_size = 512;
	lo.num_blocks = blocks;
	lo.backend = scsitgt_backend_ram_ops();
	lo.backend_ctx = bctx;
	return scsitgt_lun_create(&lun, tgt, &lo) == 0 ? 0 : -1;
}

static inline int h_init_dm(struct harness *h, bool with_lun,
			    const struct scsitgt__iscsi_dm_ops *dm)
{
	struct scsitgt_target_opts to;
	struct scsitgt__iscsi_engine *ie;
	int rc;

	memset(h, 0, sizeof(*h));
	if (uv_loop_init(&h->loop) != 0)
		return -1;
	if (scsitgt_engine_create(&h->engine, &h->loop, NULL) != 0)
		return -1;
	scsitgt_target_opts_init(&to, sizeof(to));
	to.name = H_TARGET;
	if (scsitgt_target_create(&h->tgt, h->engine, &to) != 0)
		return -1;
	if (with_lun && h_ram_lun(h->tgt, 0, 4096) != 0)
		return -1;
	ie = scsitgt__iscsi_engine_get(h->engine);
	if (ie == NULL)
		return -1;
	h->portal.ie = ie;
	h->portal.tpgt = 1;
	h->portal.port = 3260;
	h->portal.listener_closed = true;
	snprintf(h->portal.address, sizeof(h->portal.address), "127.0.0.1");
	scsitgt__list_add_tail(&ie->portals, &h->portal.node);
	scsitgt__iscsi_rx_init(&h->out_rx, &h_out_ops, h, 16u << 20);
	rc = scsitgt__iscsi_conn_create(&h->conn, &h->portal, dm, h, NULL, NULL);
	h->cmd_sn = 1;
	h->itt = 1;
	return rc;
}

static inline int h_init(struct harness *h, bool with_lun)
{
	return h_init_dm(h, with_lun, &h_dm_ops);
}

static inline void h_fini(struct harness *h)
{
	if (!h_conn_gone(h)) {
		scsitgt__iscsi_conn_close(h->conn, "test over");
		h_pump(h);
	}
	scsitgt__list_remove(&h->portal.node);
	scsitgt_engine_destroy(h->engine, NULL, NULL);
	uv_run(&h->loop, UV_RUN_DEFAULT);
	uv_loop_close(&h->loop);
	scsitgt__iscsi_rx_destroy(&h->out_rx);
	for (unsigned int i = 0; i < h->npdus; i++)
		free(h->pdus[i].data);
}

/* Wait (bounded) until the task of @itt has left the connection. */
static inline bool h_task_gone(struct harness *h, uint32_t itt)
{
	for (int i = 0; i < 100; i++) {
		if (scsitgt__iscsi_task_find(h->conn, itt) == NULL)
			return true;
		h_pump(h);
	}
	return false;
}

/* Feed raw bytes as if read from the socket, then pump. */
static inline void h_feed(struct harness *h, const void *data, size_t len)
{
	if (!h_conn_gone(h))
		scsitgt__iscsi_conn_recv(h->conn, data, len);
	h_pump(h);
}

/* Send one PDU built from a BHS and data (pad and digests added here). */
static inline void h_send(struct harness *h, uint8_t *bhs, const void *data, uint32_t len)
{
	struct scsitgt__iscsi_tx *tx = scsitgt__iscsi_tx_create(1);
	uint8_t *p;

	if (tx == NULL || h_conn_gone(h)) {
		scsitgt__iscsi_tx_destroy(tx);
		return;
	}
	p = scsitgt__iscsi_tx_add(tx, data, len);
	memcpy(p, bhs, ISCSI_BHS_LEN);
	scsitgt__iscsi_tx_seal(tx, h->conn->rx.header_digest, h->conn->rx.data_digest);
	for (int i = 0; i < tx->iovcnt && !h_conn_gone(h); i++)
		scsitgt__iscsi_conn_recv(h->conn, tx->iov[i].iov_base, tx->iov[i].iov_len);
	scsitgt__iscsi_tx_destroy(tx);
	h_pump(h);
}

/* The next PDU the target sent, or NULL. */
/* Value of @key in a response's text data segment, or NULL. */
static inline const char *h_find_key(const struct h_pdu *r, const char *key)
{
	size_t kl = strlen(key);

	for (uint32_t off = 0; r->data && off < r->len;) {
		const char *kv = (const char *)r->data + off;
		size_t l = strnlen(kv, r->len - off);

		if (l > kl && memcmp(kv, key, kl) == 0 && kv[kl] == '=')
			return kv + kl + 1;
		off += (uint32_t)l + 1;
	}
	return NULL;
}

static inline struct h_pdu *h_take(struct harness *h)
{
	return h->next < h->npdus ? &h->pdus[h->next++] : NULL;
}

static inline void h_login_bhs(struct harness *h, uint8_t *bhs, uint8_t flags, uint16_t tsih)
{
	static const uint8_t isid[6] = { 0x80, 0x12, 0x34, 0x56, 0x00, 0x01 };

	scsitgt__bhs_init(bhs, ISCSI_OP_LOGIN_REQ | ISCSI_FLAG_IMMEDIATE, flags);
	memcpy(&bhs[ISCSI_LOGIN_ISID], isid, 6);
	put_be16(&bhs[ISCSI_LOGIN_TSIH], tsih);
	put_be32(&bhs[ISCSI_BHS_ITT], h->itt);
	put_be32(&bhs[ISCSI_BHS_CMDSN], h->cmd_sn);
}

/* Build "k=v\0..." text from a '|' separated list. */
static inline uint32_t h_text(char *buf, size_t size, const char *list)
{
	size_t n = strlen(list);

	if (n + 1 > size)
		return 0;
	memcpy(buf, list, n + 1);
	for (size_t i = 0; i < n; i++)
		if (buf[i] == '|')
			buf[i] = '\0';
	return (uint32_t)n + 1;
}

#define H_OP_KEYS                                                                             \
	"HeaderDigest=None|DataDigest=None|InitialR2T=No|ImmediateData=Yes|"                  \
	"DataPDUInOrder=Yes|DataSequenceInOrder=Yes|MaxConnections=1|MaxBurstLength=131072|"  \
	"FirstBurstLength=65536|DefaultTime2Wait=2|DefaultTime2Retain=0|MaxOutstandingR2T=4|" \
	"ErrorRecoveryLevel=0|MaxRecvDataSegmentLength=8192"

/* A complete AuthMethod=None login straight to full feature phase; returns the status. */
static inline int h_login(struct harness *h, const char *session_type)
{
	uint8_t bhs[ISCSI_BHS_LEN];
	char text[2048], keys[1024];
	uint32_t len;
	struct h_pdu *r;

	if (strcmp(session_type, "Discovery") == 0)
		snprintf(keys, sizeof(keys), "InitiatorName=%s|SessionType=Discovery|%s",
			 H_INITIATOR, H_OP_KEYS);
	else
		snprintf(keys, sizeof(keys), "InitiatorName=%s|TargetName=%s|SessionType=Normal|%s",
			 H_INITIATOR, H_TARGET, H_OP_KEYS);
	len = h_text(text, sizeof(text), keys);
	/* CSG=1 (operational), NSG=3, T=1. */
	h_login_bhs(h, bhs, ISCSI_LOGIN_FLAG_TRANSIT | (1 << ISCSI_LOGIN_CSG_SHIFT) | 3, 0);
	h_send(h, bhs, text, len);
	r = h_take(h);
	if (r == NULL || scsitgt__bhs_opcode(r->bhs) != ISCSI_OP_LOGIN_RSP)
		return -1;
	/* A refused login drops the connection: only a successful one leaves a session. */
	if (r->bhs[ISCSI_LOGIN_STATUS_CLASS] != 0)
		return r->bhs[ISCSI_LOGIN_STATUS_CLASS] << 8 | r->bhs[ISCSI_LOGIN_STATUS_DETAIL];
	/* The harness's commands expect no POWER ON unit attention (core/ua.c). */
	if (h->conn->sess && h->conn->sess->core)
		h->conn->sess->core->ua_no_power_on = true;
	return 0;
}

/* A SCSI Command BHS with a 10-byte CDB (@op, LBA, blocks), the next ITT and CmdSN. */
static inline void h_cmd_bhs(struct harness *h, uint8_t *bhs, uint8_t flags, uint32_t edtl,
			     uint8_t op, uint32_t lba, uint16_t blocks)
{
	scsitgt__bhs_init(bhs, ISCSI_OP_SCSI_CMD, flags | 1 /* simple */);
	put_be32(&bhs[ISCSI_BHS_ITT], ++h->itt);
	put_be32(&bhs[ISCSI_CMD_EDTL], edtl);
	put_be32(&bhs[ISCSI_BHS_CMDSN], h->cmd_sn++);
	bhs[ISCSI_CMD_CDB] = op;
	put_be32(&bhs[ISCSI_CMD_CDB + 2], lba);
	put_be16(&bhs[ISCSI_CMD_CDB + 7], blocks);
}

/* Send an immediate Logout (close the session) with @itt. */
static inline void h_logout(struct harness *h, uint32_t itt)
{
	uint8_t bhs[ISCSI_BHS_LEN];

	scsitgt__bhs_init(bhs, ISCSI_OP_LOGOUT_REQ | ISCSI_FLAG_IMMEDIATE,
			  ISCSI_FLAG_FINAL | ISCSI_LOGOUT_CLOSE_SESSION);
	put_be32(&bhs[ISCSI_BHS_ITT], itt);
	put_be32(&bhs[ISCSI_BHS_CMDSN], h->cmd_sn);
	h_send(h, bhs, NULL, 0);
}

#endif /* SCSITGT_TEST_ISCSI_HARNESS_H */
