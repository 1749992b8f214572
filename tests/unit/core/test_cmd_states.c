/* SPDX-License-Identifier: MIT */
/*
 * The command state diagram of core/cmd.h, checked against the moves real commands make. The
 * table below is this test's own copy of the drawing (not cmd.c's): every transition the core
 * makes while commands go through normal completion, a refused CDB, an abort while executing,
 * an abort while waiting for Data-Out, a TMF abort of a parked ORDERED command, a parked command
 * whose turn comes, and the loss of the nexus while a backend holds a command (ORPHANED) is
 * observed through cmd.c's debug hook and must be an edge of the drawing; each scenario also
 * checks the exact path of its command. cmd.c's own table must equal the drawing, and an
 * illegal move must stop a debug build (the assertion is live in test builds).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "cdb_build.h"
#include "core/order.h"
#include "core/scsi_spec.h"
#include "fake_backend.h"
#include "loop_fabric.h"

#ifdef NDEBUG
/* cmd.c's hook and assertions exist only in debug and test builds. */
int main(void)
{
	return 77;
}
#else

enum {
	NEW = SCSITGT__CMD_NEW,
	NEED_DATA = SCSITGT__CMD_NEED_DATA,
	READY = SCSITGT__CMD_READY,
	PARKED = SCSITGT__CMD_PARKED,
	EXEC = SCSITGT__CMD_EXEC,
	DONE = SCSITGT__CMD_DONE,
	ABORTED = SCSITGT__CMD_ABORTED,
	ORPHANED = SCSITGT__CMD_ORPHANED,
	ABANDONED = SCSITGT__CMD_ABANDONED,
	FREED = SCSITGT__CMD_FREED,
	NSTATES = SCSITGT__CMD_NSTATES,
};

/* The drawing in cmd.h, edge by edge. */
static const struct edge {
	int from, to;
} diagram[] = {
	/* setup */
	{ NEW, NEED_DATA },
	{ NEW, READY },
	/* setup refused, fail() before execute */
	{ NEW, DONE },
	{ NEED_DATA, DONE },
	{ READY, DONE },
	/* a command of the core's own starts at once */
	{ NEW, EXEC },
	/* execute, or held back by an older ORDERED / HEAD OF QUEUE task */
	{ NEED_DATA, EXEC },
	{ READY, EXEC },
	{ NEED_DATA, PARKED },
	{ READY, PARKED },
	{ PARKED, EXEC },
	/* last io back, emulation ends */
	{ EXEC, DONE },
	/* abort */
	{ NEED_DATA, ABORTED },
	{ READY, ABORTED },
	{ PARKED, ABORTED },
	{ EXEC, ABORTED },
	/* nexus lost while a backend holds it */
	{ NEED_DATA, ORPHANED },
	{ READY, ORPHANED },
	{ EXEC, ORPHANED },
	{ ABORTED, ORPHANED },
	/* aborted by another nexus under TAS 1: answered TASK ABORTED */
	{ ABORTED, DONE },
	/* engine shutdown gives it up */
	{ NEED_DATA, ABANDONED },
	{ READY, ABANDONED },
	{ EXEC, ABANDONED },
	{ ABORTED, ABANDONED },
	{ ORPHANED, ABANDONED },
	/* destroyed, freed */
	{ NEW, FREED },
	{ NEED_DATA, FREED },
	{ READY, FREED },
	{ PARKED, FREED },
	{ EXEC, FREED },
	{ DONE, FREED },
	{ ABORTED, FREED },
	{ ORPHANED, FREED },
	{ ABANDONED, FREED },
};

static bool in_diagram(int from, int to)
{
	for (size_t i = 0; i < sizeof(diagram) / sizeof(diagram[0]); i++)
		if (diagram[i].from == from && diagram[i].to == to)
			return true;
	return false;
}

/* What the hook saw: every move of every command, and the path of the one being watched. */
static struct {
	unsigned int n, bad;
	int bad_from, bad_to;
	const struct scsitgt__cmd *watch;
	int path[16];
	unsigned int npath;
} seen;

static void observe(const struct scsitgt__cmd *cmd, enum scsitgt__cmd_state from,
		    enum scsitgt__cmd_state to)
{
	seen.n++;
	if (!in_diagram((int)from, (int)to)) {
		seen.bad++;
		seen.bad_from = (int)from;
		seen.bad_to = (int)to;
	}
	if (cmd == seen.watch && seen.npath < 16) {
		if (seen.npath == 0)
			seen.path[seen.npath++] = (int)from;
		seen.path[seen.npath++] = (int)to;
	}
}

static void watch(const struct scsitgt__cmd *cmd)
{
	seen.watch = cmd;
	seen.npath = 0;
}

/* The watched command went exactly through @n states @... */
static void assert_path(unsigned int n, ...)
{
	va_list ap;

	assert_int_equal(seen.npath, n);
	va_start(ap, n);
	for (unsigned int i = 0; i < n; i++)
		assert_int_equal(seen.path[i], va_arg(ap, int));
	va_end(ap);
}

struct task {
	bool done, aborted;
	uint8_t status;
	struct scsitgt__cmd *cmd;
};

struct ct {
	struct loop_fabric *lf;
	struct fake_backend *fb;
	struct scsitgt__session *s;
};

static void ct_done(struct scsitgt__cmd *cmd)
{
	struct task *task = *(struct task **)scsitgt__cmd_fabric_priv(cmd);

	task->done = true;
	task->status = cmd->status;
	task->cmd = NULL;
	scsitgt__cmd_destroy(cmd);
}

static void ct_aborted(struct scsitgt__cmd *cmd)
{
	struct task *task = *(struct task **)scsitgt__cmd_fabric_priv(cmd);

	task->done = true;
	task->aborted = true;
	task->cmd = NULL;
	scsitgt__cmd_destroy(cmd);
}

static void ct_shutdown(struct scsitgt__session *sess)
{
	scsitgt__session_destroy(sess);
}

static const struct scsitgt__fabric_ops ct_ops = {
	.name = "cmd-states-test",
	.cmd_done = ct_done,
	.cmd_aborted = ct_aborted,
	.session_shutdown = ct_shutdown,
};

static int setup(void **state)
{
	struct ct *t = calloc(1, sizeof(*t));
	struct fake_backend_opts o;
	struct scsitgt_lun *lun;
	struct scsitgt__nexus_info ni = {
		.protocol_id = SCSITGT__PROTO_ISCSI,
		.initiator_name = "iqn.2024-01.org.example:states",
		.initiator_port = "iqn.2024-01.org.example:states,i,0x000000000001",
		.target_port = "t,t,0x0001",
		.rel_port_id = 1,
		.tpg_id = 1,
	};

	assert_non_null(t);
	assert_int_equal(loop_fabric_create(&t->lf, NULL), 0);
	fake_backend_opts_init(&o);
	o.mode = FAKE_MANUAL;
	assert_int_equal(fake_backend_lun_create(&lun, &t->fb, t->lf->tgt, 0, 0, &o), 0);
	assert_int_equal(scsitgt__session_create(&t->s, t->lf->tgt, &ni, &ct_ops, t), 0);
	t->s->ua_no_power_on = true;
	memset(&seen, 0, sizeof(seen));
	scsitgt__cmd_transition_hook = observe;
	*state = t;
	return 0;
}

static int teardown(void **state)
{
	struct ct *t = *state;

	fake_backend_complete_pending(t->fb);
	if (t->s)
		scsitgt__session_destroy(t->s);
	loop_fabric_destroy(t->lf);
	/* Every move, the teardown's included, is an edge of the drawing. */
	scsitgt__cmd_transition_hook = NULL;
	assert_true(seen.n > 0);
	if (seen.bad)
		fail_msg("transition %d -> %d is not in the diagram", seen.bad_from, seen.bad_to);
	free(t);
	return 0;
}

/* Create and set up a READ (10) / WRITE (10) of one block at @lba; not executed yet. */
static struct scsitgt__cmd *cmd_new(struct ct *t, uint8_t opcode, uint64_t lba, uint8_t attr,
				    uint64_t tag, struct task *task)
{
	uint8_t cdb[CDB_BUF], lun[8];
	size_t len = cdb_rw(cdb, opcode, lba, 1, 0);
	struct scsitgt__cmd *cmd;

	memset(task, 0, sizeof(*task));
	assert_int_equal(scsitgt__cmd_create(&cmd, t->s, sizeof(task)), 0);
	*(struct task **)scsitgt__cmd_fabric_priv(cmd) = task;
	task->cmd = cmd;
	watch(cmd);
	scsitgt__lun_encode(0, lun);
	scsitgt__cmd_setup(cmd, lun, cdb, len, attr, tag);
	return cmd;
}

static void tmf_cb(void *arg, enum scsitgt__tmf_response response)
{
	*(int *)arg = (int)response;
}

static void abort_task(struct ct *t, uint64_t tag)
{
	uint8_t lun[8];
	int resp = -1;

	scsitgt__lun_encode(0, lun);
	scsitgt__tmf_execute(t->s, SCSITGT__TMF_ABORT_TASK, lun, tag, tmf_cb, &resp);
	while (resp == -1)
		assert_int_not_equal(uv_run(&t->lf->loop, UV_RUN_ONCE), 0);
	assert_int_equal(resp, SCSITGT__TMF_COMPLETE);
}

/* cmd.c's table is the drawing: no edge more, none less. */
static void test_table_is_the_diagram(void **state)
{
	(void)state;
	for (int from = 0; from < NSTATES; from++)
		for (int to = 0; to < NSTATES; to++)
			if (scsitgt__cmd_transition_allowed(from, to) != in_diagram(from, to))
				fail_msg("cmd.c allows %d -> %d: %d, the diagram: %d", from, to,
					 scsitgt__cmd_transition_allowed(from, to),
					 in_diagram(from, to));
	assert_false(scsitgt__cmd_transition_allowed((enum scsitgt__cmd_state)NSTATES,
						     SCSITGT__CMD_NEW));
}

static void test_read_completes(void **state)
{
	struct ct *t = *state;
	struct task r;

	scsitgt__cmd_execute(cmd_new(t, SBC_READ_10, 0, SCSITGT__TASK_SIMPLE, 1, &r));
	assert_false(r.done);
	fake_backend_complete_pending(t->fb);
	assert_true(r.done);
	assert_int_equal(r.status, SAM_STAT_GOOD);
	assert_path(5, NEW, READY, EXEC, DONE, FREED);
}

static void test_write_completes(void **state)
{
	struct ct *t = *state;
	struct task w;
	struct scsitgt__cmd *cmd = cmd_new(t, SBC_WRITE_10, 0, SCSITGT__TASK_SIMPLE, 1, &w);

	assert_int_equal(cmd->state, NEED_DATA);
	memset(cmd->buf, 0xa5, cmd->xfer_len);
	scsitgt__cmd_execute(cmd);
	fake_backend_complete_pending(t->fb);
	assert_true(w.done);
	assert_int_equal(w.status, SAM_STAT_GOOD);
	assert_path(5, NEW, NEED_DATA, EXEC, DONE, FREED);
}

static void test_refused(void **state)
{
	struct ct *t = *state;
	struct task r;
	struct scsitgt__cmd *cmd;
	static const uint8_t bad[6] = { 0xff };
	uint8_t lun[8];

	memset(&r, 0, sizeof(r));
	assert_int_equal(scsitgt__cmd_create(&cmd, t->s, sizeof(struct task *)), 0);
	*(struct task **)scsitgt__cmd_fabric_priv(cmd) = &r;
	watch(cmd);
	scsitgt__lun_encode(0, lun);
	scsitgt__cmd_setup(cmd, lun, bad, sizeof(bad), SCSITGT__TASK_SIMPLE, 1);
	scsitgt__cmd_execute(cmd);
	assert_true(r.done);
	assert_int_equal(r.status, SAM_STAT_CHECK_CONDITION);
	assert_path(3, NEW, DONE, FREED);
}

static void test_abort_exec(void **state)
{
	struct ct *t = *state;
	struct task r;

	scsitgt__cmd_execute(cmd_new(t, SBC_READ_10, 0, SCSITGT__TASK_SIMPLE, 7, &r));
	assert_int_equal(t->fb->npending, 1);
	/* The TMF waits for the io: complete it once the abort is in. */
	{
		uint8_t lun[8];
		int resp = -1;

		scsitgt__lun_encode(0, lun);
		scsitgt__tmf_execute(t->s, SCSITGT__TMF_ABORT_TASK, lun, 7, tmf_cb, &resp);
		assert_int_equal(resp, -1);
		assert_false(r.done);
		fake_backend_complete_pending(t->fb);
		assert_int_equal(resp, SCSITGT__TMF_COMPLETE);
	}
	assert_true(r.aborted);
	assert_path(5, NEW, READY, EXEC, ABORTED, FREED);
}

static void test_abort_need_data(void **state)
{
	struct ct *t = *state;
	struct task w;

	cmd_new(t, SBC_WRITE_10, 0, SCSITGT__TASK_SIMPLE, 8, &w);
	abort_task(t, 8);
	assert_true(w.aborted);
	assert_path(4, NEW, NEED_DATA, ABORTED, FREED);
}

static void test_abort_parked_ordered(void **state)
{
	struct ct *t = *state;
	struct task o1, o2;
	struct scsitgt__cmd *c1, *c2;

	c1 = cmd_new(t, SBC_READ_10, 0, SCSITGT__TASK_ORDERED, 1, &o1);
	scsitgt__cmd_execute(c1);
	c2 = cmd_new(t, SBC_READ_10, 1, SCSITGT__TASK_ORDERED, 2, &o2);
	scsitgt__cmd_execute(c2);
	assert_int_equal(c2->state, PARKED);
	assert_int_equal(t->fb->npending, 1);
	abort_task(t, 2);
	assert_true(o2.aborted);
	assert_path(5, NEW, READY, PARKED, ABORTED, FREED);
	fake_backend_complete_pending(t->fb);
	assert_true(o1.done);
	assert_int_equal(o1.status, SAM_STAT_GOOD);
}

static void test_parked_turn_comes(void **state)
{
	struct ct *t = *state;
	struct task o1, o2;
	struct scsitgt__cmd *c2;

	scsitgt__cmd_execute(cmd_new(t, SBC_READ_10, 0, SCSITGT__TASK_ORDERED, 1, &o1));
	c2 = cmd_new(t, SBC_READ_10, 1, SCSITGT__TASK_ORDERED, 2, &o2);
	scsitgt__cmd_execute(c2);
	assert_int_equal(c2->state, PARKED);
	fake_backend_complete_pending(t->fb);
	assert_true(o1.done);
	/* the deferred order pass starts it */
	while (t->fb->npending == 0)
		assert_int_not_equal(uv_run(&t->lf->loop, UV_RUN_ONCE), 0);
	fake_backend_complete_pending(t->fb);
	assert_true(o2.done);
	assert_path(6, NEW, READY, PARKED, EXEC, DONE, FREED);
}

static void test_nexus_lost_orphans(void **state)
{
	struct ct *t = *state;
	struct task r, w;

	/* a write still waiting for its data is freed with the nexus (NEED_DATA -> FREED) */
	cmd_new(t, SBC_WRITE_10, 1, SCSITGT__TASK_SIMPLE, 2, &w);
	scsitgt__cmd_execute(cmd_new(t, SBC_READ_10, 0, SCSITGT__TASK_SIMPLE, 1, &r));
	scsitgt__session_destroy(t->s);
	t->s = NULL;
	assert_path(4, NEW, READY, EXEC, ORPHANED);
	fake_backend_complete_pending(t->fb);
	/* freed by its last io, without a response */
	assert_false(r.done);
	assert_path(5, NEW, READY, EXEC, ORPHANED, FREED);
}

/* An illegal move (fail() of an executing command) stops a debug build. */
static void test_illegal_move_asserts(void **state)
{
	struct ct *t = *state;
	struct task r;
	struct scsitgt__cmd *cmd = cmd_new(t, SBC_READ_10, 0, SCSITGT__TASK_SIMPLE, 1, &r);
	int status = 0;
	pid_t pid;

	assert_false(in_diagram(EXEC, DONE + 100));
	assert_false(in_diagram(DONE, EXEC));
	assert_false(in_diagram(FREED, FREED));
	scsitgt__cmd_execute(cmd);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* no core file and no noise from the expected abort */
		close(STDERR_FILENO);
		scsitgt__cmd_fail(cmd, SCSITGT__SR_INVALID_FIELD_IN_CDB);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
	assert_int_equal(WTERMSIG(status), SIGABRT);
	fake_backend_complete_pending(t->fb);
	assert_true(r.done);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table_is_the_diagram),
		cmocka_unit_test_setup_teardown(test_read_completes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_completes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(test_abort_exec, setup, teardown),
		cmocka_unit_test_setup_teardown(test_abort_need_data, setup, teardown),
		cmocka_unit_test_setup_teardown(test_abort_parked_ordered, setup, teardown),
		cmocka_unit_test_setup_teardown(test_parked_turn_comes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nexus_lost_orphans, setup, teardown),
		cmocka_unit_test_setup_teardown(test_illegal_move_asserts, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
#endif /* NDEBUG */
