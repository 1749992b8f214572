/* SPDX-License-Identifier: MIT */
/*
 * Task attributes (SAM-5 §8.6) on one LUN's task set, with a backend that holds every io until
 * the test releases it (FAKE_MANUAL): SIMPLE tasks run together, ORDERED waits for every older
 * task and holds back the newer ones, HEAD OF QUEUE starts at once and goes ahead of waiting
 * tasks, ACA is refused. A small fabric of its own passes the task attribute and records the
 * order of completions.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cdb_build.h"
#include "core/order.h"
#include "core/sbc_sanitize.h"
#include "core/scsi_spec.h"
#include "util/be.h"
#include "fake_backend.h"
#include "loop_fabric.h"

struct task {
	bool done;
	bool aborted;
	uint8_t status;
	uint8_t sense_key, asc;
	struct scsitgt__cmd *cmd;
};

struct ot {
	struct loop_fabric *lf;
	struct fake_backend *fb;
	struct scsitgt__session *s1, *s2;
	/* Tags in completion order. */
	uint64_t order[32];
	unsigned int norder;
};

struct priv {
	struct ot *t;
	struct task *task;
};

static void ot_done(struct scsitgt__cmd *cmd)
{
	struct priv *p = scsitgt__cmd_fabric_priv(cmd);

	p->task->done = true;
	p->task->status = cmd->status;
	if (cmd->sense_len >= 14) {
		p->task->sense_key = cmd->sense[2] & 0x0f;
		p->task->asc = cmd->sense[12];
	}
	p->task->cmd = NULL;
	if (p->t->norder < 32)
		p->t->order[p->t->norder++] = cmd->tag;
	scsitgt__cmd_destroy(cmd);
}

static void ot_aborted(struct scsitgt__cmd *cmd)
{
	struct priv *p = scsitgt__cmd_fabric_priv(cmd);

	p->task->done = true;
	p->task->aborted = true;
	p->task->cmd = NULL;
	scsitgt__cmd_destroy(cmd);
}

static void ot_shutdown(struct scsitgt__session *sess)
{
	scsitgt__session_destroy(sess);
}

static const struct scsitgt__fabric_ops ot_ops = {
	.name = "order-test",
	.cmd_done = ot_done,
	.cmd_aborted = ot_aborted,
	.session_shutdown = ot_shutdown,
};

static struct scsitgt__session *ot_session(struct ot *t, const char *iport)
{
	struct scsitgt__nexus_info ni = {
		.protocol_id = SCSITGT__PROTO_ISCSI,
		.initiator_name = "iqn.2024-01.org.example:order",
		.initiator_port = iport,
		.target_port = "t,t,0x0001",
		.rel_port_id = 1,
		.tpg_id = 1,
	};
	struct scsitgt__session *s;

	assert_int_equal(scsitgt__session_create(&s, t->lf->tgt, &ni, &ot_ops, t), 0);
	/* These tests are about ordering, not unit attentions. */
	s->ua_no_power_on = true;
	return s;
}

static struct ot *ot_create(void)
{
	struct ot *t = calloc(1, sizeof(*t));
	struct fake_backend_opts o;
	struct scsitgt_lun *lun;

	assert_non_null(t);
	assert_int_equal(loop_fabric_create(&t->lf, NULL), 0);
	fake_backend_opts_init(&o);
	o.mode = FAKE_MANUAL;
	o.store = true;
	assert_int_equal(fake_backend_lun_create(&lun, &t->fb, t->lf->tgt, 0, 0, &o), 0);
	t->s1 = ot_session(t, "iqn.2024-01.org.example:order,i,0x000000000001");
	t->s2 = ot_session(t, "iqn.2024-01.org.example:order,i,0x000000000002");
	return t;
}

static void ot_destroy(struct ot *t)
{
	fake_backend_complete_pending(t->fb);
	loop_fabric_destroy(t->lf);
	free(t);
}

/* Receive the command @cdb on LUN 0 of @s with task attribute @attr (parse, data), without
 * executing it. */
static struct scsitgt__cmd *receive_cdb(struct ot *t, struct scsitgt__session *s,
					const uint8_t *cdb, size_t len, uint8_t attr, uint64_t tag,
					struct task *task)
{
	uint8_t lun[8];
	struct scsitgt__cmd *cmd;
	struct priv *p;

	memset(task, 0, sizeof(*task));
	assert_int_equal(scsitgt__cmd_create(&cmd, s, sizeof(*p)), 0);
	p = scsitgt__cmd_fabric_priv(cmd);
	p->t = t;
	p->task = task;
	task->cmd = cmd;
	scsitgt__lun_encode(0, lun);
	scsitgt__cmd_setup(cmd, lun, cdb, len, attr, tag);
	if (cmd->state == SCSITGT__CMD_NEED_DATA)
		memset(cmd->buf, (int)(tag & 0xff), cmd->xfer_len);
	return cmd;
}

/* Start the command @cdb on LUN 0 of @s with task attribute @attr. */
static void start_cdb(struct ot *t, struct scsitgt__session *s, const uint8_t *cdb, size_t len,
		      uint8_t attr, uint64_t tag, struct task *task)
{
	scsitgt__cmd_execute(receive_cdb(t, s, cdb, len, attr, tag, task));
}

/* Start a READ (10) or WRITE (10) of one block at @lba with task attribute @attr. */
static void start(struct ot *t, struct scsitgt__session *s, uint8_t opcode, uint64_t lba,
		  uint8_t attr, uint64_t tag, struct task *task)
{
	uint8_t cdb[CDB_BUF];
	size_t len = cdb_rw(cdb, opcode, lba, 1, 0);

	start_cdb(t, s, cdb, len, attr, tag, task);
}

/* Run the loop until the backend holds @n ios (the deferred start pass runs there). */
static void wait_pending(struct ot *t, size_t n)
{
	while (t->fb->npending < n)
		uv_run(&t->lf->loop, UV_RUN_ONCE);
}

/* Let the loop run what it has queued, without blocking. */
static void settle(struct ot *t)
{
	for (int i = 0; i < 4; i++)
		uv_run(&t->lf->loop, UV_RUN_NOWAIT);
}

static void test_simple_concurrent(void **state)
{
	struct ot *t = ot_create();
	struct task a, b, c;

	(void)state;
	start(t, t->s1, SBC_READ_10, 0, SCSITGT__TASK_SIMPLE, 1, &a);
	start(t, t->s1, SBC_WRITE_10, 1, SCSITGT__TASK_SIMPLE, 2, &b);
	/* Untagged counts as SIMPLE. */
	start(t, t->s2, SBC_READ_10, 2, SCSITGT__TASK_UNTAGGED, 3, &c);
	assert_int_equal(t->fb->npending, 3);
	fake_backend_complete_pending(t->fb);
	assert_true(a.done && b.done && c.done);
	assert_int_equal(a.status, SAM_STAT_GOOD);
	assert_int_equal(t->norder, 3);
	ot_destroy(t);
}

static void test_ordered(void **state)
{
	struct ot *t = ot_create();
	struct task s1, s2, o, s3, o2;

	(void)state;
	start(t, t->s1, SBC_READ_10, 0, SCSITGT__TASK_SIMPLE, 1, &s1);
	start(t, t->s2, SBC_READ_10, 1, SCSITGT__TASK_SIMPLE, 2, &s2);
	/* ORDERED waits for both older tasks, of either nexus (one shared task set). */
	start(t, t->s1, SBC_WRITE_10, 0, SCSITGT__TASK_ORDERED, 3, &o);
	/* A newer SIMPLE and a newer ORDERED wait for it. */
	start(t, t->s2, SBC_READ_10, 0, SCSITGT__TASK_SIMPLE, 4, &s3);
	start(t, t->s1, SBC_WRITE_10, 5, SCSITGT__TASK_ORDERED, 5, &o2);
	settle(t);
	assert_int_equal(t->fb->npending, 2);
	assert_false(o.done || s3.done || o2.done);

	fake_backend_complete_pending(t->fb);
	assert_true(s1.done && s2.done);
	/* Now the ORDERED task alone. */
	wait_pending(t, 1);
	settle(t);
	assert_int_equal(t->fb->npending, 1);
	assert_false(s3.done);
	fake_backend_complete_pending(t->fb);
	assert_true(o.done);
	/* Then the SIMPLE behind it; the second ORDERED waits for that one too. */
	wait_pending(t, 1);
	settle(t);
	assert_int_equal(t->fb->npending, 1);
	fake_backend_complete_pending(t->fb);
	assert_true(s3.done);
	wait_pending(t, 1);
	fake_backend_complete_pending(t->fb);
	assert_true(o2.done);
	assert_int_equal(t->norder, 5);
	assert_int_equal(t->order[2], 3);
	assert_int_equal(t->order[3], 4);
	assert_int_equal(t->order[4], 5);
	/* The READ behind the ORDERED WRITE of block 0 saw its data. */
	assert_int_equal(s3.status, SAM_STAT_GOOD);
	assert_int_equal(t->fb->data[0], 3);
	ot_destroy(t);
}

static void test_head_of_queue(void **state)
{
	struct ot *t = ot_create();
	struct task s1, o, h, s2, h2;

	(void)state;
	start(t, t->s1, SBC_READ_10, 0, SCSITGT__TASK_SIMPLE, 1, &s1);
	start(t, t->s1, SBC_WRITE_10, 0, SCSITGT__TASK_ORDERED, 2, &o);
	assert_int_equal(t->fb->npending, 1);
	/* HEAD OF QUEUE runs at once, ahead of the waiting ORDERED task. */
	start(t, t->s2, SBC_READ_10, 3, SCSITGT__TASK_HEAD_OF_QUEUE, 3, &h);
	assert_int_equal(t->fb->npending, 2);
	/* A newer SIMPLE waits (behind both). */
	start(t, t->s2, SBC_READ_10, 4, SCSITGT__TASK_SIMPLE, 4, &s2);
	/* A second HEAD OF QUEUE does not wait for the first. */
	start(t, t->s1, SBC_READ_10, 5, SCSITGT__TASK_HEAD_OF_QUEUE, 5, &h2);
	assert_int_equal(t->fb->npending, 3);
	fake_backend_complete_pending(t->fb);
	assert_true(s1.done && h.done && h2.done);
	assert_false(o.done || s2.done);
	wait_pending(t, 1);
	settle(t);
	assert_int_equal(t->fb->npending, 1);
	fake_backend_complete_pending(t->fb);
	assert_true(o.done);
	wait_pending(t, 1);
	fake_backend_complete_pending(t->fb);
	assert_true(s2.done);
	assert_int_equal(t->order[3], 2);
	assert_int_equal(t->order[4], 4);
	ot_destroy(t);
}

/* SBC-4 §5.28.1: SANITIZE is processed as HEAD OF QUEUE whatever attribute it was sent with. */
static void test_sanitize_head_of_queue(void **state)
{
	struct ot *t = ot_create();
	struct task s1, o, z;
	uint8_t cdb[CDB_BUF] = { 0 };

	(void)state;
	start(t, t->s1, SBC_READ_10, 0, SCSITGT__TASK_SIMPLE, 1, &s1);
	start(t, t->s1, SBC_WRITE_10, 0, SCSITGT__TASK_ORDERED, 2, &o);
	assert_int_equal(t->fb->npending, 1);
	/* sent SIMPLE behind a waiting ORDERED task, it still runs at once (IMMED: GOOD) */
	cdb[0] = SBC_SANITIZE;
	cdb[1] = 0x80 | SBC_SANITIZE_CRYPTO_ERASE;
	start_cdb(t, t->s2, cdb, 10, SCSITGT__TASK_SIMPLE, 3, &z);
	assert_true(z.done);
	assert_int_equal(z.status, SAM_STAT_GOOD);
	assert_false(o.done);
	/* the read, the sanitize's piece, then the ORDERED write */
	for (int i = 0; i < 6 && !(s1.done && o.done); i++) {
		fake_backend_complete_pending(t->fb);
		settle(t);
	}
	assert_true(s1.done && o.done);
	ot_destroy(t);
}

static void test_aca_refused(void **state)
{
	struct ot *t = ot_create();
	struct task a;

	(void)state;
	start(t, t->s1, SBC_READ_10, 0, SCSITGT__TASK_ACA, 1, &a);
	assert_true(a.done);
	assert_int_equal(a.status, SAM_STAT_CHECK_CONDITION);
	assert_int_equal(a.sense_key, SENSE_ILLEGAL_REQUEST);
	assert_int_equal(a.asc, 0x24);
	assert_int_equal(t->fb->npending, 0);
	ot_destroy(t);
}

static void tmf_cb(void *arg, enum scsitgt__tmf_response response)
{
	*(int *)arg = (int)response;
}

/* A held-back task can be aborted; the others go on, and nothing starts it later. */
static void test_abort_parked(void **state)
{
	struct ot *t = ot_create();
	struct task o, s, s2;
	uint8_t lun[8];
	int resp = -1;

	(void)state;
	start(t, t->s1, SBC_WRITE_10, 0, SCSITGT__TASK_ORDERED, 1, &o);
	start(t, t->s1, SBC_READ_10, 0, SCSITGT__TASK_SIMPLE, 2, &s);
	start(t, t->s2, SBC_READ_10, 1, SCSITGT__TASK_SIMPLE, 3, &s2);
	assert_int_equal(t->fb->npending, 1);
	scsitgt__lun_encode(0, lun);
	scsitgt__tmf_execute(t->s1, SCSITGT__TMF_ABORT_TASK, lun, 2, tmf_cb, &resp);
	assert_int_equal(resp, SCSITGT__TMF_COMPLETE);
	assert_true(s.aborted);
	assert_false(o.done);
	fake_backend_complete_pending(t->fb);
	assert_true(o.done);
	wait_pending(t, 1);
	fake_backend_complete_pending(t->fb);
	assert_true(s2.done);
	settle(t);
	assert_int_equal(t->fb->npending, 0);
	assert_int_equal(t->norder, 2);
	ot_destroy(t);
}

/* A nexus that ends with tasks held back and in the backend leaks nothing and blocks nobody. */
static void test_session_gone(void **state)
{
	struct ot *t = ot_create();
	struct task o, s, s2;

	(void)state;
	start(t, t->s1, SBC_WRITE_10, 0, SCSITGT__TASK_ORDERED, 1, &o);
	start(t, t->s1, SBC_READ_10, 0, SCSITGT__TASK_SIMPLE, 2, &s);
	start(t, t->s2, SBC_READ_10, 0, SCSITGT__TASK_SIMPLE, 3, &s2);
	scsitgt__session_destroy(t->s1);
	t->s1 = NULL;
	/* The ORDERED write is still in the backend: s2 waits for it. */
	settle(t);
	assert_false(s2.done);
	fake_backend_complete_pending(t->fb);
	wait_pending(t, 1);
	fake_backend_complete_pending(t->fb);
	assert_true(s2.done);
	assert_int_equal(s2.status, SAM_STAT_GOOD);
	ot_destroy(t);
}

static void reserve6(struct ot *t, struct scsitgt__session *s, uint8_t attr, uint64_t tag,
		     struct task *task)
{
	static const uint8_t cdb[6] = { SPC_RESERVE_6 };

	start_cdb(t, s, cdb, sizeof(cdb), attr, tag, task);
}

/* Complete every held io and run the loop until @task is done. */
static void finish(struct ot *t, struct task *task)
{
	for (int i = 0; i < 50 && !task->done; i++) {
		fake_backend_complete_pending(t->fb);
		settle(t);
	}
	assert_true(task->done);
}

/*
 * SPC-2 §5.5.1: one nexus holds a RESERVE (6), the other's conflicts. A RESERVE checked at
 * parse while the LUN was free and executed after another nexus reserved (two loops do it at
 * the same moment with workers, B1 of reviewi) must conflict; it got GOOD and took the
 * reservation from the first holder, which then conflicted on its own WRITE.
 */
static void test_reserve6_parse_exec_gap(void **state)
{
	static const uint8_t cdb[6] = { SPC_RESERVE_6 };
	struct ot *t = ot_create();
	struct scsitgt__cmd *late;
	struct task r2, r1, w1;

	(void)state;
	late = receive_cdb(t, t->s2, cdb, sizeof(cdb), SCSITGT__TASK_SIMPLE, 1, &r2);
	reserve6(t, t->s1, SCSITGT__TASK_SIMPLE, 2, &r1);
	assert_true(r1.done);
	assert_int_equal(r1.status, SAM_STAT_GOOD);
	scsitgt__cmd_execute(late);
	assert_true(r2.done);
	assert_int_equal(r2.status, SAM_STAT_RESERVATION_CONFLICT);
	/* the first holder still holds it */
	start(t, t->s1, SBC_WRITE_10, 0, SCSITGT__TASK_SIMPLE, 3, &w1);
	finish(t, &w1);
	assert_int_equal(w1.status, SAM_STAT_GOOD);
	ot_destroy(t);
}

/* The same gap on one loop: s2's RESERVE (6) held behind an ORDERED task while s1's HEAD OF
 * QUEUE RESERVE (6) is granted. */
static void test_reserve6_parked(void **state)
{
	struct ot *t = ot_create();
	struct task o, r2, r1, w1;

	(void)state;
	start(t, t->s1, SBC_WRITE_10, 0, SCSITGT__TASK_ORDERED, 1, &o);
	wait_pending(t, 1);
	reserve6(t, t->s2, SCSITGT__TASK_SIMPLE, 2, &r2);
	settle(t);
	assert_false(r2.done);
	reserve6(t, t->s1, SCSITGT__TASK_HEAD_OF_QUEUE, 3, &r1);
	assert_true(r1.done);
	assert_int_equal(r1.status, SAM_STAT_GOOD);
	finish(t, &o);
	finish(t, &r2);
	assert_int_equal(r2.status, SAM_STAT_RESERVATION_CONFLICT);
	start(t, t->s1, SBC_WRITE_10, 0, SCSITGT__TASK_SIMPLE, 4, &w1);
	finish(t, &w1);
	assert_int_equal(w1.status, SAM_STAT_GOOD);
	ot_destroy(t);
}

/* PERSISTENT RESERVE OUT @sa of @s (basic parameter list: @key, @sa_key). */
static void pr_out(struct ot *t, struct scsitgt__session *s, uint8_t sa, uint8_t type, uint64_t key,
		   uint64_t sa_key, uint8_t attr, uint64_t tag, struct task *task)
{
	uint8_t cdb[10] = { SPC_PERSISTENT_RESERVE_OUT, sa, type };
	struct scsitgt__cmd *cmd;

	put_be32(&cdb[5], 24);
	cmd = receive_cdb(t, s, cdb, sizeof(cdb), attr, tag, task);
	assert_int_equal(cmd->state, SCSITGT__CMD_NEED_DATA);
	memset(cmd->buf, 0, 24);
	put_be64(&cmd->buf[0], key);
	put_be64(&cmd->buf[8], sa_key);
	scsitgt__cmd_execute(cmd);
}

/*
 * SAM-5 §8.6.3: a task newer than an ORDERED one is processed after it. s2 holds a WRITE
 * EXCLUSIVE reservation; s1 sends PREEMPT ORDERED (behind its own READ), then s2 a SIMPLE
 * WRITE, held behind the PREEMPT. When it starts s2 has lost its registration and the
 * reservation: RESERVATION CONFLICT, not a write parse had admitted before (reviewi D1).
 */
static void test_write_behind_ordered_preempt(void **state)
{
	struct ot *t = ot_create();
	struct task a, b, c, rd, pre, w2;

	(void)state;
	pr_out(t, t->s2, PR_OUT_REGISTER, 0, 0, 0x22, SCSITGT__TASK_SIMPLE, 10, &a);
	pr_out(t, t->s1, PR_OUT_REGISTER, 0, 0, 0x11, SCSITGT__TASK_SIMPLE, 11, &b);
	pr_out(t, t->s2, PR_OUT_RESERVE, PR_TYPE_WE, 0x22, 0, SCSITGT__TASK_SIMPLE, 12, &c);
	finish(t, &c);
	assert_int_equal(a.status, SAM_STAT_GOOD);
	assert_int_equal(b.status, SAM_STAT_GOOD);
	assert_int_equal(c.status, SAM_STAT_GOOD);
	start(t, t->s1, SBC_READ_10, 7, SCSITGT__TASK_SIMPLE, 13, &rd);
	wait_pending(t, 1);
	pr_out(t, t->s1, PR_OUT_PREEMPT, PR_TYPE_WE, 0x11, 0x22, SCSITGT__TASK_ORDERED, 14, &pre);
	start(t, t->s2, SBC_WRITE_10, 0, SCSITGT__TASK_SIMPLE, 15, &w2);
	settle(t);
	assert_false(pre.done);
	assert_false(w2.done);
	finish(t, &pre);
	assert_int_equal(pre.status, SAM_STAT_GOOD);
	finish(t, &w2);
	assert_int_equal(w2.status, SAM_STAT_RESERVATION_CONFLICT);
	ot_destroy(t);
}

/*
 * SBC-4 §4.33: while a sanitize runs, media commands get NOT READY, SANITIZE IN PROGRESS. A
 * WRITE held behind an ORDERED task when the SANITIZE (processed as HEAD OF QUEUE) starts
 * must get it when its turn comes during the sanitize, not reach the medium: its data
 * outlived the completed sanitize.
 */
static void test_write_parked_across_sanitize(void **state)
{
	struct ot *t = calloc(1, sizeof(*t));
	struct fake_backend_opts o;
	struct scsitgt_lun *lun;
	struct task rd, ord, w, z;
	uint8_t cdb[CDB_BUF] = { 0 };
	bool written_while_running = false;

	(void)state;
	assert_int_equal(loop_fabric_create(&t->lf, NULL), 0);
	fake_backend_opts_init(&o);
	o.mode = FAKE_MANUAL;
	o.num_blocks = 8192; /* 4 MiB: a sanitize of several pieces */
	assert_int_equal(fake_backend_lun_create(&lun, &t->fb, t->lf->tgt, 0, 0, &o), 0);
	t->s1 = ot_session(t, "iqn.2024-01.org.example:order,i,0x000000000001");
	t->s2 = ot_session(t, "iqn.2024-01.org.example:order,i,0x000000000002");
	start(t, t->s1, SBC_READ_10, 0, SCSITGT__TASK_SIMPLE, 1, &rd);
	start(t, t->s1, SBC_WRITE_10, 1, SCSITGT__TASK_ORDERED, 2, &ord);
	start(t, t->s2, SBC_WRITE_10, 5, SCSITGT__TASK_SIMPLE, 3, &w);
	settle(t);
	assert_false(w.done);
	cdb[0] = SBC_SANITIZE;
	cdb[1] = 0x80 | SBC_SANITIZE_CRYPTO_ERASE; /* IMMED */
	start_cdb(t, t->s1, cdb, 10, SCSITGT__TASK_SIMPLE, 4, &z);
	assert_true(z.done);
	assert_int_equal(z.status, SAM_STAT_GOOD);
	/* one round of the backend at a time until the WRITE ended and the sanitize too */
	for (int i = 0; i < 40 && !(w.done && lun->sanitize.state != SCSITGT__SANITIZE_RUNNING);
	     i++) {
		for (size_t k = 0; k < t->fb->npending; k++)
			if (scsitgt_io_get_lba(t->fb->pending[k]) == 5 &&
			    scsitgt_io_get_type(t->fb->pending[k]) == SCSITGT_IO_WRITE)
				written_while_running = true;
		fake_backend_complete_pending(t->fb);
		settle(t);
	}
	assert_true(w.done);
	assert_int_equal(lun->sanitize.state, SCSITGT__SANITIZE_IDLE);
	assert_false(written_while_running);
	assert_int_equal(w.status, SAM_STAT_CHECK_CONDITION);
	assert_int_equal(w.sense_key, SENSE_NOT_READY);
	assert_int_equal(w.asc, 0x04);
	ot_destroy(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_simple_concurrent),
		cmocka_unit_test(test_ordered),
		cmocka_unit_test(test_head_of_queue),
		cmocka_unit_test(test_sanitize_head_of_queue),
		cmocka_unit_test(test_aca_refused),
		cmocka_unit_test(test_abort_parked),
		cmocka_unit_test(test_session_gone),
		cmocka_unit_test(test_reserve6_parse_exec_gap),
		cmocka_unit_test(test_reserve6_parked),
		cmocka_unit_test(test_write_behind_ordered_preempt),
		cmocka_unit_test(test_write_parked_across_sanitize),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
