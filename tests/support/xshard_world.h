/* SPDX-License-Identifier: MIT */
/*
 * A two-shard test world (issue 18): an engine with one worker loop on a private home loop, one
 * target, LUN 0 on the test's backend, nexus A on home (shard 0) and nexus B bound to the
 * worker's shard (shard 1), whose commands run on the worker thread. The test thread is the
 * home thread: it runs the home loop, and every wait is on a condition, never on time.
 *
 * How to write a two-shard test (cmocka): add its name to the list of tests/unit/core/meson.build
 * that links xshard_world_dep, then
 *
 *	static int setup(void **state)
 *	{
 *		struct xw_world *w;
 *
 *		xw_world_create(&w, "iqn.2024-01.org.example:mytest");
 *		xw_world_start(w, NULL);        (LUN 0, NULL: a null LUN; then A and B)
 *		*state = w;
 *		return 0;
 *	}
 *	teardown: xw_world_destroy(*state) (a backend that holds ios lets them go first), or
 *	xw_teardown as the test's teardown.
 *
 *	A LUN on another backend: between the two calls make it (on w->loop where it takes a
 *	loop) and pass xw_world_start() its struct scsitgt_lun_opts; w->bctx is its context.
 *	A RAM LUN behind the fault backend (ios held, failed or delayed by its rules):
 *	xw_world_start_fault(w, "hang@write") instead, xw_fault_stats() to count, and
 *	xw_teardown_fault (it lets the held ios go first).
 *
 *	In a test: struct xw_cmd x; xw_cmd_init(&x, w->b, opcode, cdb_len); fill the rest of x.cdb
 *	(and x.dout, x.dout_len for Data-Out, x.attr for a task attribute), then
 *	xw_run(w, &x) returns the status; x.sense, x.din/x.din_len hold what came back.
 *	xw_rw10(), xw_caw(), xw_run_tur(), xw_run_report_luns(), xw_pr_out()/xw_run_pr_out() and
 *	xw_assert_ua() cover the usual ones.
 *
 * A command runs on its nexus's loop: A's right here, B's posted to the worker. xw_start()
 * returns once it is set up or executing there (x.wait_data leaves a write waiting for its
 * Data-Out); xw_wait() runs the home loop until a message from the command's end has set
 * x.ended (XW_DONE or XW_ABORTED, by cmd_done or cmd_aborted; x.ended_on_home says which thread
 * ended it), after which @x may be reused. Another thread may run B's commands too (streams
 * against home's changes): it waits by a semaphore instead. xw_finished() peeks without
 * waiting. Anything else that ends on the worker wakes the home thread the same way:
 * xw_wake_home() from there, xw_wait_flag() here. xw_settle() lets both loops run what is
 * ready, to check that something has NOT happened yet. The fabric counts the unit attentions it
 * hears of (w->uas, and w->uas_off_home on another thread than home's). Run the test under the
 * TSan build as well (scripts/test.sh --tsan).
 *
 * A stream (struct xw_stream) runs n commands on nexus B one after another on a thread of its
 * own while the test thread changes something on home. That thread only sorts and counts the
 * answers: cmocka's asserts belong to the test's thread (one that fails elsewhere crashes or
 * hangs the test instead of failing it), so the test asserts on the counts after
 * xw_stream_join():
 *
 *	struct xw_stream s = { .n = 1000, .fill = my_fill, .judge = my_judge };
 *
 *	xw_stream_start(w, &s);
 *	while (!xw_stream_done(&s))
 *		(change something on home, then uv_run(&w->loop, UV_RUN_NOWAIT))
 *	xw_stream_join(&s);
 *	assert_int_equal(s.count[MY_GOOD], s.n); or xw_stream_assert_none(&s, MY_OTHER, "...")
 */
#ifndef SCSITGT_TESTS_XSHARD_WORLD_H
#define SCSITGT_TESTS_XSHARD_WORLD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "core/fabric.h"
#include "core/worker.h"
#include "libscsitgt/backend_fault.h"
#include "libscsitgt/scsitgt.h"

#define XW_PORT_A "iqn.2024-01.org.example:a,i,0x23d000000001"
#define XW_PORT_B "iqn.2024-01.org.example:b,i,0x23d000000002"
/* Data-Out and Data-In bytes one command carries at most. */
#define XW_DATA_MAX 4096

struct xw_world {
	uv_loop_t loop;
	uv_thread_t home;
	struct scsitgt_engine *engine;
	struct scsitgt_target *tgt;
	char target_port[224];
	struct scsitgt_lun *lun;
	/* lo.backend_ctx of xw_world_start() */
	void *bctx;
	struct scsitgt__session *a, *b;
	/* set between xw_world_create() and xw_world_start(): the nexuses take the data a
	 * backend lends to a READ (scsitgt_io_lend_data()), as iSCSI/TCP's do */
	bool lend_data_in;
	/* unit attentions the fabric heard of (fabric.h: always on the home loop), and how many
	 * of them came on another thread */
	_Atomic unsigned int uas, uas_off_home;
};

/* A flag the home thread waits for, set on home by a message: once it is set, the message has
 * left the queue and the object that holds it may be reused. */
struct xw_wake {
	struct scsitgt__msg msg;
	_Atomic int *flag;
	int value;
};

/* How a command ended, as its fabric heard it. */
enum {
	XW_RUNNING,
	XW_DONE,
	XW_ABORTED
};

/* One command and what came back. */
struct xw_cmd {
	struct scsitgt__msg msg; /* first: posted to the worker */
	struct xw_world *w;
	struct scsitgt__session *sess;
	/* task attribute as scsitgt__cmd_setup() takes it; 0: SIMPLE */
	uint8_t attr;
	/* the LUN addressed (xw_cmd_init(): 0) */
	uint64_t lun_id;
	uint8_t cdb[16];
	size_t cdb_len;
	uint8_t dout[XW_DATA_MAX];
	size_t dout_len;
	/* true: leave a write waiting for its Data-Out (NEED_DATA: in no backend) */
	bool wait_data;
	_Atomic int ended;
	_Atomic bool ended_on_home;
	/* set on the command's own thread as it ends (xw_finished()) */
	_Atomic bool finished;
	uint8_t status;
	uint8_t sense[SCSITGT_SENSE_BUF_SIZE];
	uint8_t din[XW_DATA_MAX];
	size_t din_len;
	/* the Data-In came lent by the backend (released as the command ended) */
	bool lent;
	/* optional: called on the command's own thread as it ends, after the fields above are
	 * filled and before its waiter is told (to look at what else holds at that moment) */
	void (*at_end)(struct xw_cmd *x);
	/* private to xshard_world.c */
	bool wake_home;
	uv_sem_t started, done;
	struct xw_wake wake;
};

/* How many kinds of answer a stream's judge tells apart. */
#define XW_STREAM_KINDS 8

/* What a command's answer was: its status and the key, ASC and ASCQ of its sense. */
struct xw_answer {
	uint8_t status, key, asc, ascq;
};

/* @n commands on nexus B off home (see above). */
struct xw_stream {
	struct xw_world *w;
	unsigned int n;
	/* make the @i-th command in @x (zeroed, x->sess already B) */
	void (*fill)(const struct xw_stream *s, struct xw_cmd *x, unsigned int i);
	/* the kind of @x's answer, below XW_STREAM_KINDS; called on the stream's thread: it
	 * must not assert */
	unsigned int (*judge)(const struct xw_stream *s, const struct xw_cmd *x);
	/* written by the stream's thread, read after xw_stream_join(): answers of each kind,
	 * the first of each, and judge's answers out of range */
	unsigned int count[XW_STREAM_KINDS];
	struct xw_answer first[XW_STREAM_KINDS];
	unsigned int bad_kinds;
	/* private to xshard_world.c */
	_Atomic int done;
	uv_thread_t thread;
};

/* The loop, the engine (one worker) and target @name. */
void xw_world_create(struct xw_world **out, const char *name);
/* LUN 0 from @lo (NULL: xw_null_lun(w, 0)), then nexus A on home and B on the worker, each past
 * its POWER ON. */
void xw_world_start(struct xw_world *w, const struct scsitgt_lun_opts *lo);
/* A further LUN @id on the null backend, 2048 blocks of 512 bytes. */
struct scsitgt_lun *xw_null_lun(struct xw_world *w, uint64_t id);
/* Destroy the nexuses left (w->a, w->b: NULL once a test destroyed one), the engine (closing
 * the LUN's backend), the loop. */
void xw_world_destroy(struct xw_world *w);
/* xw_world_start() on LUN 0 of 2048 blocks of 512 bytes on the RAM backend wrapped by the fault
 * backend with the rule @spec (libscsitgt/backend_fault.h); w->bctx is the fault context. */
void xw_world_start_fault(struct xw_world *w, const char *spec);
/* The counters of the fault backend of xw_world_start_fault(). */
struct scsitgt_fault_stats xw_fault_stats(const struct xw_world *w);
/* cmocka teardowns (*@state: the world): xw_world_destroy(); and the same of a world of
 * xw_world_start_fault(), whose backend first lets what it still holds come back, failed with
 * EIO (each command ends on its own loop). A test after which the LUN closed its backend sets
 * w->bctx NULL: nothing is released then. */
int xw_teardown(void **state);
int xw_teardown_fault(void **state);
/* Remove LUN 0 (w->lun is NULL after) and run the home loop until its removal called back;
 * w->bctx is left to the test (the backend closes with the LUN once nothing of it is held). */
void xw_lun_remove(struct xw_world *w);
/* A further nexus on @shard, past its POWER ON. */
struct scsitgt__session *xw_nexus(struct xw_world *w, const char *port, unsigned int shard);
/* The same before any command: its first one meets what a new nexus meets. */
struct scsitgt__session *xw_nexus_new(struct xw_world *w, const char *port, unsigned int shard);

/* Whether this is the home thread. */
bool xw_on_home(const struct xw_world *w);

/* Start @x on its nexus's loop (see above); from another thread than home's only a worker's. */
void xw_start(struct xw_world *w, struct xw_cmd *x);
/* Until @x ended (home: running the home loop); its status. */
uint8_t xw_wait(struct xw_world *w, struct xw_cmd *x);
/* xw_start() then xw_wait(). */
uint8_t xw_run(struct xw_world *w, struct xw_cmd *x);
/* Whether @x has ended, without waiting. */
bool xw_finished(const struct xw_cmd *x);

/* Set *@flag to @value from the home loop: @k belongs to the object that ended, posted once;
 * nothing is allocated. From any thread. */
void xw_wake_home(struct xw_world *w, struct xw_wake *k, _Atomic int *flag, int value);
/* Run the home loop until @flag is set (whatever sets it on the worker wakes the loop). */
void xw_wait_flag(struct xw_world *w, _Atomic int *flag);
/* Let both loops run what is ready: the worker every message posted to it before this call,
 * home its loop (without blocking); four rounds. */
void xw_settle(struct xw_world *w);

/* @x zeroed for a command of @s whose CDB, @cdb_len bytes, starts with @op; not started. */
void xw_cmd_init(struct xw_cmd *x, struct scsitgt__session *s, uint8_t op, size_t cdb_len);
/* @x as READ (10) or WRITE (10) (@op) of @blocks blocks of 512 bytes at @lba; a WRITE carries
 * that many bytes of zeros (x->dout). Not started. */
void xw_rw10(struct xw_cmd *x, struct scsitgt__session *s, uint8_t op, uint32_t lba,
	     uint16_t blocks);
/* @x as COMPARE AND WRITE (SBC-4 §5.3) of one block of 512 bytes at @lba: compare with zeros,
 * write bytes of @fill. Not started. */
void xw_caw(struct xw_cmd *x, struct scsitgt__session *s, uint64_t lba, uint8_t fill);
/* TEST UNIT READY on @s to its end; its status. */
uint8_t xw_run_tur(struct xw_world *w, struct scsitgt__session *s, struct xw_cmd *x);
/* REPORT LUNS (SELECT REPORT 0, ALLOCATION LENGTH @alloc) on @s to its end; its status. */
uint8_t xw_run_report_luns(struct xw_world *w, struct scsitgt__session *s, uint32_t alloc,
			   struct xw_cmd *x);
/* @x as PERSISTENT RESERVE OUT (SPC-5 §6.17) service action @sa of @type from @s, with
 * RESERVATION KEY @key and SERVICE ACTION RESERVATION KEY @sa_key; not started. */
void xw_pr_out(struct xw_cmd *x, struct scsitgt__session *s, uint8_t sa, uint8_t type, uint64_t key,
	       uint64_t sa_key);
/* The same, run to its end; its status. */
uint8_t xw_run_pr_out(struct xw_world *w, struct scsitgt__session *s, uint8_t sa, uint8_t type,
		      uint64_t key, uint64_t sa_key, struct xw_cmd *x);
/* The sense key of @x. */
uint8_t xw_sense_key(const struct xw_cmd *x);
/* @x ended in CHECK CONDITION, UNIT ATTENTION @asc/@ascq (fixed format sense). */
void xw_assert_ua(const struct xw_cmd *x, uint8_t asc, uint8_t ascq);

/* @x's answer. */
struct xw_answer xw_answer_of(const struct xw_cmd *x);

/* Start @s (fill, judge and n set; the counts zero) on a thread of its own, on @w's nexus B. */
void xw_stream_start(struct xw_world *w, struct xw_stream *s);
/* Whether @s has run all its commands. From any thread. */
bool xw_stream_done(const struct xw_stream *s);
/* Wait for @s's thread to end; on the test's thread. Fails the test if judge answered a kind out
 * of range. */
void xw_stream_join(struct xw_stream *s);
/* Fail the test if @s had an answer of @kind (@what names it), with the first such answer, at
 * the caller's line. On the test's thread, after xw_stream_join(). */
#define xw_stream_assert_none(s, kind, what) \
	xw_stream_assert_none_at((s), (kind), (what), __FILE__, __LINE__)
void xw_stream_assert_none_at(const struct xw_stream *s, unsigned int kind, const char *what,
			      const char *file, int line);

#endif /* SCSITGT_TESTS_XSHARD_WORLD_H */
