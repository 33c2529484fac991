/*
 * test_proc.c - unit tests of cmd/sandboxd/proc.c and proctable.c on a
 * real libuv loop with real children: output and exit codes, launch
 * errors, cwd and env, stdin, the output bound, the timeout that ends a
 * whole group that ignores SIGTERM and descendants that left its session,
 * a free that ends them too, background children that outlive a command
 * that exited (answered after a short drain, their output drained after
 * the free), signals, a terminal with resize, and the process cap and ids;
 * each with keepers reused and with a keeper per command, and the reuse
 * itself: one keeper for commands that leave nothing behind, another
 * after one that does, stale signals to an idle keeper discarded, an
 * idle keeper killed and replaced, a job bigger than one message.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>
#include <unistd.h>

#include "asb/common.h"
#include "proc.h"
#include "proctable.h"

typedef struct {
	char out[65536], err[65536];
	size_t out_len, err_len;
	uint64_t total[3];
	bool exited;
	sbxd_exit ex;
	sbxd_proc *p;
	const char *resize_after;  /* resize + write "go\n" once this text is seen */
	bool resized;
	uint64_t pause_at;         /* pause the output once stdout reached this */
} run_state;

static void on_output(sbxd_proc *p, sbxd_stream s, const char *d, size_t n, void *ud)
{
	run_state *st = ud;
	char *buf = s == SBXD_STDERR ? st->err : st->out;
	size_t *len = s == SBXD_STDERR ? &st->err_len : &st->out_len;
	st->total[s] += n;
	size_t room = sizeof(st->out) - 1 - *len;
	size_t k = n < room ? n : room;
	memcpy(buf + *len, d, k);
	*len += k;
	buf[*len] = '\0';
	if (st->pause_at && st->total[SBXD_STDOUT] >= st->pause_at)
		sbxd_proc_pause_output(p);
	if (st->resize_after && !st->resized && strstr(st->out, st->resize_after)) {
		st->resized = true;
		ck_assert_int_eq(sbxd_proc_resize(p, 120, 40), 0);
		ck_assert_int_eq(sbxd_proc_write_stdin(p, "go\n", 3, NULL, NULL), 0);
	}
}

static void on_exit_cb(sbxd_proc *p, const sbxd_exit *ex, void *ud)
{
	run_state *st = ud;
	st->exited = true;
	st->ex = *ex;
}

static const sbxd_proc_callbacks cbs = { on_output, on_exit_cb, NULL };

/* Async start (on_start): what it said, and whether output came before. */
typedef struct {
	run_state run;
	bool started;
	int rc;
	pid_t pid;
	size_t out_before;
} async_state;

static void on_start_cb(sbxd_proc *p, int rc, void *ud)
{
	async_state *a = ud;
	a->started = true;
	a->rc = rc;
	a->pid = sbxd_proc_pid(p);
	a->out_before = a->run.out_len + a->run.err_len;
}

static void async_output(sbxd_proc *p, sbxd_stream s, const char *d, size_t n, void *ud)
{
	async_state *a = ud;
	ck_assert_msg(a->started, "output before on_start");
	on_output(p, s, d, n, &a->run);
}

static void async_exit(sbxd_proc *p, const sbxd_exit *ex, void *ud)
{
	on_exit_cb(p, ex, &((async_state *)ud)->run);
}

static const sbxd_proc_callbacks async_cbs = { async_output, async_exit, on_start_cb };

static void guard(uv_timer_t *t)
{
	ck_abort_msg("test timed out waiting for the process");
}

/* Runs the loop until the process reported its exit (10 s guard). */
static void wait_exit(uv_loop_t *loop, run_state *st)
{
	uv_timer_t t;
	uv_timer_init(loop, &t);
	uv_timer_start(&t, guard, 10000, 0);
	while (!st->exited)
		uv_run(loop, UV_RUN_ONCE);
	uv_close((uv_handle_t *)&t, NULL);
	uv_run(loop, UV_RUN_NOWAIT);
}

/* Runs the loop until on_start (10 s guard). */
static void wait_start(uv_loop_t *loop, async_state *a)
{
	uv_timer_t t;
	uv_timer_init(loop, &t);
	uv_timer_start(&t, guard, 10000, 0);
	while (!a->started)
		uv_run(loop, UV_RUN_ONCE);
	uv_close((uv_handle_t *)&t, NULL);
	uv_run(loop, UV_RUN_NOWAIT);
}

static void flag_set(uv_timer_t *t)
{
	*(bool *)t->data = true;
}

/* Runs the loop for `ms`. */
static void run_loop_for(uv_loop_t *loop, uint64_t ms)
{
	bool fired = false;
	uv_timer_t t;
	uv_timer_init(loop, &t);
	t.data = &fired;
	uv_timer_start(&t, flag_set, ms, 0);
	while (!fired)
		uv_run(loop, UV_RUN_ONCE);
	uv_close((uv_handle_t *)&t, NULL);
	uv_run(loop, UV_RUN_NOWAIT);
}

/* Every test runs twice: with keepers reused (the daemon's default) and
 * with a fresh keeper per command (--idle-keepers 0). The pool of the
 * test's loop is made at its first command. */
static unsigned int max_idle;
static sbxd_keeper_pool *pool;

static void setup_pooled(void)
{
	max_idle = 4;
	pool = NULL;
}

static void setup_fresh(void)
{
	max_idle = 0;
	pool = NULL;
}

static sbxd_keeper_pool *keepers(uv_loop_t *loop)
{
	if (!pool)
		ck_assert_int_eq(sbxd_keeper_pool_new(&pool, loop, max_idle, NULL), 0);
	return pool;
}

/* Lets the pool go, runs the loop until every handle is closed (every
 * keeper reaped) and closes it. */
static void close_loop(uv_loop_t *loop)
{
	sbxd_keeper_pool_free(pool);
	pool = NULL;
	uv_run(loop, UV_RUN_DEFAULT);
	ck_assert_int_eq(uv_loop_close(loop), 0);
}

/* Frees the process and closes the loop. */
static void finish(uv_loop_t *loop, sbxd_proc *p)
{
	sbxd_proc_free(p);
	uv_run(loop, UV_RUN_DEFAULT);
	close_loop(loop);
}

static int start(uv_loop_t *loop, run_state *st, sbxd_proc_options *o, char **argv)
{
	memset(st, 0, sizeof(*st));
	o->argv = argv;
	o->keepers = keepers(loop);
	return sbxd_proc_spawn(&st->p, loop, o, &cbs, st);
}

START_TEST(output_and_exit_code)
{
	uv_loop_t loop;
	uv_loop_init(&loop);
	run_state st;
	sbxd_proc_options o = SBXD_PROC_OPTIONS_INIT;
	char *argv[] = { "/bin/sh", "-c", "echo hi; echo err >&2; exit 3", NULL };
	ck_assert_int_eq(start(&loop, &st, &o, argv), 0);
	ck_assert_int_gt(sbxd_proc_pid(st.p), 0);
	wait_exit(&loop, &st);
	ck_assert_str_eq(st.out, "hi\n");
	ck_assert_str_eq(st.err, "err\n");
	ck_assert_int_eq(st.ex.exit_code, 3);
	ck_assert_int_eq(st.ex.signal, 0);
	ck_assert(!st.ex.timed_out);
	ck_assert(sbxd_proc_done(st.p));
	finish(&loop, st.p);
}
END_TEST

START_TEST(launch_errors)
{
	uv_loop_t loop;
	uv_loop_init(&loop);
	run_state st;
	sbxd_proc_options o = SBXD_PROC_OPTIONS_INIT;
	char *missing[] = { "no-such-command-sbxd", NULL };
	ck_assert_int_eq(start(&loop, &st, &o, missing), ASB_ENOTFOUND);
	ck_assert_ptr_nonnull(strstr(asb_error_last()->message, "command or path not found"));
	char *missing_abs[] = { "/nonexistent/bin", NULL };
	ck_assert_int_eq(start(&loop, &st, &o, missing_abs), ASB_ENOTFOUND);
	char tmpl[] = "/tmp/sbxd-noexec-XXXXXX";
	int fd = mkstemp(tmpl);
	ck_assert_int_ge(fd, 0);
	close(fd);
	char *not_exec[] = { tmpl, NULL };
	ck_assert_msg(start(&loop, &st, &o, not_exec) == ASB_EFORBIDDEN, "%s",
		              asb_error_last()->message);
	unlink(tmpl);
	char *empty[] = { "", NULL };
	ck_assert_int_eq(start(&loop, &st, &o, empty), ASB_EINVAL);
	ck_assert_str_eq(asb_error_last()->message, "command is required");
	uv_run(&loop, UV_RUN_DEFAULT);  /* failed starts close their handles */
	close_loop(&loop);
}
END_TEST

START_TEST(cwd_and_env)
{
	uv_loop_t loop;
	uv_loop_init(&loop);
	run_state st;
	sbxd_proc_options o = SBXD_PROC_OPTIONS_INIT;
	o.cwd_fd = open("/usr", O_PATH | O_DIRECTORY);
	char *env[] = { "SBXD_A=1", "HOME=/nowhere", "SBXD_A=2", NULL };
	o.env = env;
	char *argv[] = { "/bin/sh", "-c", "pwd; echo $SBXD_A $HOME; env | grep -c '^SBXD_A='", NULL };
	ck_assert_int_eq(start(&loop, &st, &o, argv), 0);
	close(o.cwd_fd);
	wait_exit(&loop, &st);
	ck_assert_str_eq(st.out, "/usr\n2 /nowhere\n1\n");
	finish(&loop, st.p);
}
END_TEST

START_TEST(stdin_pipe_and_eof)
{
	uv_loop_t loop;
	uv_loop_init(&loop);
	run_state st;
	sbxd_proc_options o = SBXD_PROC_OPTIONS_INIT;
	o.stdin_pipe = true;
	char *argv[] = { "cat", NULL };
	ck_assert_int_eq(start(&loop, &st, &o, argv), 0);
	ck_assert_int_eq(sbxd_proc_write_stdin(st.p, "abc", 3, NULL, NULL), 0);
	ck_assert_int_eq(sbxd_proc_write_stdin(st.p, "", 0, NULL, NULL), 0);
	/* a big write exceeds the pipe buffer: it is queued and drained */
	static char big[1 << 20];
	memset(big, 'x', sizeof(big));
	ck_assert_int_eq(sbxd_proc_write_stdin(st.p, big, sizeof(big), NULL, NULL), 0);
	ck_assert_int_gt(sbxd_proc_stdin_pending(st.p), 0);
	ck_assert_int_eq(sbxd_proc_close_stdin(st.p), 0);
	ck_assert_int_eq(sbxd_proc_close_stdin(st.p), ASB_EINVAL);
	ck_assert_int_eq(sbxd_proc_write_stdin(st.p, "x", 1, NULL, NULL), ASB_EINVAL);
	wait_exit(&loop, &st);
	ck_assert_int_eq(st.total[SBXD_STDOUT], 3 + sizeof(big));
	ck_assert(strncmp(st.out, "abcxxx", 6) == 0);
	ck_assert_int_eq(st.ex.exit_code, 0);
	finish(&loop, st.p);
}
END_TEST

START_TEST(no_stdin_reads_eof)
{
	uv_loop_t loop;
	uv_loop_init(&loop);
	run_state st;
	sbxd_proc_options o = SBXD_PROC_OPTIONS_INIT;
	char *argv[] = { "cat", NULL };
	ck_assert_int_eq(start(&loop, &st, &o, argv), 0);
	ck_assert_int_eq(sbxd_proc_write_stdin(st.p, "x", 1, NULL, NULL), ASB_EINVAL);
	wait_exit(&loop, &st);
	ck_assert_int_eq(st.ex.exit_code, 0);
	finish(&loop, st.p);
}
END_TEST

START_TEST(output_bounded_per_stream)
{
	uv_loop_t loop;
	uv_loop_init(&loop);
	run_state st;
	sbxd_proc_options o = SBXD_PROC_OPTIONS_INIT;
	o.max_output_bytes = 1000;
	o.chunk_size = 300;
	o.drain_ms = 200;  /* stderr stays unread while paused */
	char *argv[] = { "/bin/sh", "-c", "head -c 20000000 /dev/zero; echo e >&2", NULL };
	memset(&st, 0, sizeof(st));
	st.pause_at = 1000;
	o.argv = argv;
	/* paused output past the bound is still drained: the child finishes */
	o.keepers = keepers(&loop);
	ck_assert_int_eq(sbxd_proc_spawn(&st.p, &loop, &o, &cbs, &st), 0);
	wait_exit(&loop, &st);
	ck_assert_int_eq(st.total[SBXD_STDOUT], 1000);
	ck_assert(st.ex.truncated[SBXD_STDOUT]);
	ck_assert(!st.ex.truncated[SBXD_STDERR]);
	ck_assert_str_eq(st.err, "");  /* stderr paused below its bound */
	ck_assert_int_eq(st.ex.exit_code, 0);
	finish(&loop, st.p);
}
END_TEST

static bool alive_now(pid_t pid)
{
	char p[64], buf[512];
	snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(p, "r");
	if (!f)
		return false;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	char *rp = strrchr(buf, ')');
	return rp && rp[1] == ' ' && rp[2] != 'Z' && rp[2] != 'X';
}

/* A SIGKILL is delivered asynchronously: give the process 2 s to go. */
static bool alive(pid_t pid)
{
	for (int i = 0; i < 200 && alive_now(pid); i++)
		usleep(10000);
	return alive_now(pid);
}

START_TEST(timeout_kills_group_ignoring_sigterm)
{
	uv_loop_t loop;
	uv_loop_init(&loop);
	run_state st;
	sbxd_proc_options o = SBXD_PROC_OPTIONS_INIT;
	o.timeout_ms = 300;
	o.kill_grace_ms = 300;
	char *argv[] = { "/bin/sh", "-c",
	                 "trap '' TERM; sleep 30 & echo $!; sleep 30 </dev/null >/dev/null 2>&1 & "
	                 "echo $!; wait", NULL };
	ck_assert_int_eq(start(&loop, &st, &o, argv), 0);
	wait_exit(&loop, &st);
	ck_assert(st.ex.timed_out);
	ck_assert_int_eq(st.ex.exit_code, -1);
	ck_assert_int_eq(st.ex.signal, SIGKILL);
	int a = 0, b = 0;
	ck_assert_int_eq(sscanf(st.out, "%d %d", &a, &b), 2);
	ck_assert(!alive(a));
	ck_assert(!alive(b));
	finish(&loop, st.p);
}
END_TEST

/* The numbers (pids) a command printed, among other text. */
static int pids_in(const char *out, pid_t *v, int cap)
{
	int n = 0;
	for (const char *c = out; *c && n < cap;) {
		if (*c < '0' || *c > '9') {
			c++;
			continue;
		}
		char *end;
		v[n++] = (pid_t)strtol(c, &end, 10);
		c = end;
	}
	return n;
}

START_TEST(timeout_ends_descendants_that_left_the_session)
{
	uv_loop_t loop;
	uv_loop_init(&loop);
	run_state st;
	sbxd_proc_options o = SBXD_PROC_OPTIONS_INIT;
	o.timeout_ms = 300;
	o.kill_grace_ms = 200;
	/* two children in sessions of their own, holding the output open, one
	 * of them deaf to SIGTERM: the answer must not wait for them (30 s) */
	char *argv[] = { "/bin/sh", "-c",
	                 "setsid sleep 30 & echo $!; "
	                 "setsid sh -c 'trap \"\" TERM; exec sleep 30' & echo $!; sleep 30", NULL };
	ck_assert_int_eq(start(&loop, &st, &o, argv), 0);
	wait_exit(&loop, &st);
	ck_assert(st.ex.timed_out);
	pid_t v[2];
	ck_assert_int_eq(pids_in(st.out, v, 2), 2);
	ck_assert(!alive(v[0]));
	ck_assert(!alive(v[1]));
	finish(&loop, st.p);
}
END_TEST

START_TEST(free_ends_descendants_that_left_the_session)
{
	uv_loop_t loop;
	uv_loop_init(&loop);
	run_state st;
	sbxd_proc_options o = SBXD_PROC_OPTIONS_INIT;
	/* a double fork into a session of its own, no timeout: a client gone */
	char *argv[] = { "/bin/sh", "-c",
	                 "(setsid sh -c 'echo $$; exec sleep 30' &); exec sleep 30", NULL };
	ck_assert_int_eq(start(&loop, &st, &o, argv), 0);
	while (!strchr(st.out, '\n'))
		uv_run(&loop, UV_RUN_ONCE);
	pid_t v[1];
	ck_assert_int_eq(pids_in(st.out, v, 1), 1);
	pid_t cmd = sbxd_proc_pid(st.p);
	ck_assert(alive_now(v[0]));
	finish(&loop, st.p);
	ck_assert(!alive(v[0]));
	ck_assert(!alive(cmd));
}
END_TEST

START_TEST(background_child_outlives_the_command)
{
	uv_loop_t loop;
	uv_loop_init(&loop);
	run_state st;
	sbxd_proc_lingering lingering = { 0 };
	sbxd_proc_options o = SBXD_PROC_OPTIONS_INIT;
	o.timeout_ms = 20000;
	o.lingering = &lingering;
	/* a server started in the background, which writes after the answer */
	char *argv[] = { "/bin/sh", "-c",
	                 "sh -c 'echo $$; sleep 0.3; echo late; echo late >&2; exec sleep 30' & "
	                 "echo started", NULL };
	ck_assert_int_eq(start(&loop, &st, &o, argv), 0);
	/* answered after a short drain, not at the timeout (the guard is 10 s) */
	wait_exit(&loop, &st);
	ck_assert(!st.ex.timed_out);
	ck_assert_int_eq(st.ex.exit_code, 0);
	ck_assert_msg(strstr(st.out, "started\n"), "%s", st.out);
	ck_assert_ptr_null(strstr(st.out, "late"));
	pid_t v[1];
	ck_assert_int_eq(pids_in(st.out, v, 1), 1);
	sbxd_proc_free(st.p);
	ck_assert_uint_eq(lingering.count, 1);
	/* it writes into output nobody reads any more, and lives on */
	run_loop_for(&loop, 600);
	ck_assert(alive_now(v[0]));
	ck_assert_uint_eq(lingering.count, 1);
	/* once it ends, the drain ends too */
	kill(v[0], SIGKILL);
	while (lingering.count > 0)
		uv_run(&loop, UV_RUN_ONCE);
	uv_run(&loop, UV_RUN_DEFAULT);
	close_loop(&loop);
	ck_assert(!st.exited || st.ex.exit_code == 0);
}
END_TEST

START_TEST(lingering_stops_at_its_bound_and_on_request)
{
	uv_loop_t loop;
	uv_loop_init(&loop);
	sbxd_proc_lingering lingering = { .max = 2 };
	pid_t bg[3];
	for (int i = 0; i < 3; i++) {
		run_state st;
		sbxd_proc_options o = SBXD_PROC_OPTIONS_INIT;
		o.lingering = &lingering;
		char *argv[] = { "/bin/sh", "-c", "sleep 30 & echo $!", NULL };
		ck_assert_int_eq(start(&loop, &st, &o, argv), 0);
		wait_exit(&loop, &st);
		ck_assert_int_eq(pids_in(st.out, &bg[i], 1), 1);
		sbxd_proc_free(st.p);
		ck_assert_uint_le(lingering.count, 2);
	}
	ck_assert_uint_eq(lingering.count, 2);
	sbxd_proc_lingering_stop(&lingering);
	ck_assert_uint_eq(lingering.count, 0);
	uv_run(&loop, UV_RUN_DEFAULT);
	close_loop(&loop);
	for (int i = 0; i < 3; i++) {
		ck_assert(alive_now(bg[i]));  /* stopping a drain ends no process */
		kill(bg[i], SIGKILL);
	}
}
END_TEST

START_TEST(signal_and_free_while_running)
{
	uv_loop_t loop;
	uv_loop_init(&loop);
	run_state st;
	sbxd_proc_options o = SBXD_PROC_OPTIONS_INIT;
	char *argv[] = { "sleep", "30", NULL };
	ck_assert_int_eq(start(&loop, &st, &o, argv), 0);
	ck_assert_int_eq(sbxd_proc_signal(st.p, 0), ASB_EINVAL);
	ck_assert_int_eq(sbxd_proc_signal(st.p, SIGTERM), 0);
	wait_exit(&loop, &st);
	ck_assert_int_eq(st.ex.exit_code, -1);
	ck_assert_int_eq(st.ex.signal, SIGTERM);
	ck_assert_int_eq(sbxd_proc_signal(st.p, SIGTERM), 0);  /* no-op after the end */
	sbxd_proc_free(st.p);
	/* freed while running: killed, reaped, handles closed */
	ck_assert_int_eq(start(&loop, &st, &o, argv), 0);
	pid_t pid = sbxd_proc_pid(st.p);
	finish(&loop, st.p);
	ck_assert(!alive(pid));
	ck_assert(!st.exited);  /* no callback after free */
}
END_TEST

START_TEST(pty_session_with_resize)
{
	uv_loop_t loop;
	uv_loop_init(&loop);
	run_state st;
	sbxd_proc_options o = SBXD_PROC_OPTIONS_INIT;
	o.pty = true;
	o.cols = 80;
	o.rows = 24;
	char *argv[] = { "/bin/sh", "-c",
	                 "test -t 0 && echo is-a-tty; stty size; echo ready; read x; stty size", NULL };
	memset(&st, 0, sizeof(st));
	st.resize_after = "ready";
	o.argv = argv;
	o.keepers = keepers(&loop);
	ck_assert_int_eq(sbxd_proc_spawn(&st.p, &loop, &o, &cbs, &st), 0);
	ck_assert(sbxd_proc_is_pty(st.p));
	wait_exit(&loop, &st);
	ck_assert_msg(strstr(st.out, "is-a-tty"), "%s", st.out);
	ck_assert_msg(strstr(st.out, "24 80"), "%s", st.out);
	ck_assert_msg(strstr(st.out, "40 120"), "%s", st.out);
	ck_assert_str_eq(st.err, "");
	ck_assert_int_eq(st.ex.exit_code, 0);
	ck_assert_int_eq(sbxd_proc_resize(st.p, 10, 10), ASB_ESHUTDOWN);
	finish(&loop, st.p);
}
END_TEST

START_TEST(resize_without_pty_refused)
{
	uv_loop_t loop;
	uv_loop_init(&loop);
	run_state st;
	sbxd_proc_options o = SBXD_PROC_OPTIONS_INIT;
	char *argv[] = { "true", NULL };
	ck_assert_int_eq(start(&loop, &st, &o, argv), 0);
	ck_assert_int_eq(sbxd_proc_resize(st.p, 10, 10), ASB_EINVAL);
	wait_exit(&loop, &st);
	finish(&loop, st.p);
}
END_TEST

/* Runs `script` with /bin/sh -c to its end on `loop`; its stdout in `st`. */
static void run_script(uv_loop_t *loop, run_state *st, const char *script, char *const *env)
{
	sbxd_proc_options o = SBXD_PROC_OPTIONS_INIT;
	o.env = env;
	char *argv[] = { "/bin/sh", "-c", (char *)script, NULL };
	int rc = start(loop, st, &o, argv);
	ck_assert_msg(rc == 0, "spawn: %d %s", rc, asb_error_last()->message);
	wait_exit(loop, st);
	sbxd_proc_free(st->p);
	/* the keeper's part ends at its report's EOF (10 s guard: a keeper
	 * that is not kept fails the test instead of hanging it) */
	uv_timer_t t;
	uv_timer_init(loop, &t);
	uv_timer_start(&t, guard, 10000, 0);
	while (pool && max_idle && sbxd_keeper_pool_idle(pool) == 0 && st->ex.exit_code == 0 &&
	       !strstr(st->out, "bg"))
		uv_run(loop, UV_RUN_ONCE);
	uv_close((uv_handle_t *)&t, NULL);
	uv_run(loop, UV_RUN_NOWAIT);
}

START_TEST(keepers_reused_only_when_nothing_is_left)
{
	uv_loop_t loop;
	uv_loop_init(&loop);
	run_state st;
	long parents[3];
	for (int i = 0; i < 3; i++) {
		run_script(&loop, &st, "echo $PPID", NULL);
		ck_assert_int_eq(st.ex.exit_code, 0);
		parents[i] = atol(st.out);
		ck_assert_int_gt(parents[i], 0);
		ck_assert_int_ne(parents[i], getpid());  /* a keeper between us and the command */
	}
	if (max_idle) {
		/* one keeper ran all three */
		ck_assert_int_eq(parents[1], parents[0]);
		ck_assert_int_eq(parents[2], parents[0]);
		ck_assert_uint_eq(sbxd_keeper_pool_forked(pool), 1);
	} else {
		ck_assert_int_ne(parents[1], parents[0]);
		ck_assert_int_ne(parents[2], parents[1]);
		ck_assert_uint_eq(sbxd_keeper_pool_forked(pool), 3);
	}
	/* a command that leaves a process behind keeps its keeper: the next
	 * command gets another one */
	run_script(&loop, &st, "echo $PPID bg; sleep 0.3 >/dev/null 2>&1 &", NULL);
	long kept = atol(st.out);
	run_loop_for(&loop, 50);
	run_script(&loop, &st, "echo $PPID", NULL);
	ck_assert_int_ne(atol(st.out), kept);
	ck_assert_int_gt(atol(st.out), 0);
	close_loop(&loop);
}
END_TEST

/* Starts a loop and runs a first command there: the pid of its keeper. */
static pid_t first_keeper(uv_loop_t *loop, run_state *st)
{
	uv_loop_init(loop);
	run_script(loop, st, "echo $PPID", NULL);
	return (pid_t)atol(st->out);
}

START_TEST(stale_signal_to_an_idle_keeper_spares_the_next_command)
{
	uv_loop_t loop;
	run_state st;
	pid_t k = first_keeper(&loop, &st);
	/* what a terminate or a free sent late would leave pending */
	if (max_idle) {
		ck_assert_int_eq(kill(k, SIGTERM), 0);
		ck_assert_int_eq(kill(k, SIGUSR1), 0);
	}
	run_script(&loop, &st, "sleep 0.2; echo ok $PPID", NULL);
	ck_assert_int_eq(st.ex.exit_code, 0);
	ck_assert_int_eq(st.ex.signal, 0);
	ck_assert(!st.ex.timed_out);
	char want[64];
	snprintf(want, sizeof(want), "ok %ld\n", max_idle ? (long)k : atol(st.out + 3));
	ck_assert_str_eq(st.out, want);
	close_loop(&loop);
}
END_TEST

START_TEST(idle_keeper_killed_is_replaced)
{
	uv_loop_t loop;
	run_state st;
	pid_t k = first_keeper(&loop, &st);
	if (max_idle) {
		/* a command may kill its keeper once it is idle */
		ck_assert_int_eq(kill(k, SIGKILL), 0);
		run_loop_for(&loop, 50);
	}
	run_script(&loop, &st, "echo $PPID", NULL);
	ck_assert_int_eq(st.ex.exit_code, 0);
	ck_assert_int_ne(atol(st.out), k);
	close_loop(&loop);
}
END_TEST

START_TEST(job_bigger_than_one_message)
{
	uv_loop_t loop;
	uv_loop_init(&loop);
	run_state st;
	/* 200,000 bytes of environment in two variables (one string may not
	 * pass 128 KiB at exec): the job goes in several messages */
	size_t n = 100000;
	char *big = malloc(n + 5), *big2 = malloc(n + 6);
	memcpy(big, "BIG=", 4);
	memset(big + 4, 'x', n);
	big[n + 4] = '\0';
	memcpy(big2, "BIG2=", 5);
	memset(big2 + 5, 'y', n);
	big2[n + 5] = '\0';
	char *env[] = { big, big2, "SMALL=after", NULL };
	for (int i = 0; i < 2; i++) {
		run_script(&loop, &st, "echo ${#BIG} ${#BIG2} $SMALL", env);
		ck_assert_str_eq(st.out, "100000 100000 after\n");
	}
	free(big2);
	free(big);
	close_loop(&loop);
}
END_TEST

START_TEST(async_start_then_output_and_exit)
{
	uv_loop_t loop;
	uv_loop_init(&loop);
	async_state a;
	memset(&a, 0, sizeof(a));
	sbxd_proc_options o = SBXD_PROC_OPTIONS_INIT;
	char *argv[] = { "/bin/sh", "-c", "echo hi; exit 4", NULL };
	o.argv = argv;
	o.keepers = keepers(&loop);
	ck_assert_int_eq(sbxd_proc_spawn(&a.run.p, &loop, &o, &async_cbs, &a), 0);
	ck_assert(!a.started);  /* returned before the exec */
	ck_assert_int_eq(sbxd_proc_pid(a.run.p), -1);
	ck_assert_int_eq(sbxd_proc_signal(a.run.p, SIGTERM), 0);  /* nothing yet */
	wait_start(&loop, &a);
	ck_assert_int_eq(a.rc, 0);
	ck_assert_int_gt(a.pid, 0);
	ck_assert_uint_eq(a.out_before, 0);
	wait_exit(&loop, &a.run);
	ck_assert_str_eq(a.run.out, "hi\n");
	ck_assert_int_eq(a.run.ex.exit_code, 4);
	finish(&loop, a.run.p);
}
END_TEST

START_TEST(async_start_failure_comes_to_on_start_only)
{
	uv_loop_t loop;
	uv_loop_init(&loop);
	/* executable, but no format the kernel runs: only the exec finds out */
	char tmpl[] = "/tmp/sbxd-noformat-XXXXXX";
	int fd = mkstemp(tmpl);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "\x7f\x01\x02garbage", 10), 10);
	fchmod(fd, 0755);
	close(fd);
	for (int round = 0; round < 2; round++) {  /* the keeper takes the next job */
		async_state a;
		memset(&a, 0, sizeof(a));
		sbxd_proc_options o = SBXD_PROC_OPTIONS_INIT;
		char *argv[] = { tmpl, NULL };
		o.argv = argv;
		o.keepers = keepers(&loop);
		ck_assert_int_eq(sbxd_proc_spawn(&a.run.p, &loop, &o, &async_cbs, &a), 0);
		wait_start(&loop, &a);
		ck_assert_int_eq(a.rc, ASB_ERROR);
		ck_assert_ptr_nonnull(strstr(asb_error_last()->message, "exec"));
		ck_assert_int_eq(a.pid, -1);
		run_loop_for(&loop, 50);
		ck_assert(!a.run.exited);  /* no on_exit after a failed start */
		sbxd_proc_free(a.run.p);
	}
	unlink(tmpl);
	uv_run(&loop, UV_RUN_DEFAULT);
	close_loop(&loop);
}
END_TEST

START_TEST(async_free_before_the_start_kills_the_command)
{
	uv_loop_t loop;
	uv_loop_init(&loop);
	char dir[] = "/tmp/sbxd-async-XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(dir));
	char pidfile[64], script[160];
	snprintf(pidfile, sizeof(pidfile), "%s/pid", dir);
	snprintf(script, sizeof(script), "echo $$ > %s; exec sleep 30", pidfile);
	async_state a;
	memset(&a, 0, sizeof(a));
	sbxd_proc_options o = SBXD_PROC_OPTIONS_INIT;
	char *argv[] = { "/bin/sh", "-c", script, NULL };
	o.argv = argv;
	o.keepers = keepers(&loop);
	ck_assert_int_eq(sbxd_proc_spawn(&a.run.p, &loop, &o, &async_cbs, &a), 0);
	sbxd_proc_free(a.run.p);  /* before on_start */
	uv_run(&loop, UV_RUN_DEFAULT);
	ck_assert(!a.started && !a.run.exited);  /* no callback after free */
	FILE *f = fopen(pidfile, "r");
	int pid = 0;
	if (f) {
		ck_assert_int_eq(fscanf(f, "%d", &pid), 1);
		fclose(f);
		ck_assert(!alive(pid));  /* it ran, and was killed */
	}
	unlink(pidfile);
	rmdir(dir);
	close_loop(&loop);
}
END_TEST

START_TEST(proctable_cap_and_ids)
{
	sbxd_proctable *t;
	ck_assert_int_eq(sbxd_proctable_new(&t, 0), ASB_EINVAL);
	ck_assert_int_eq(sbxd_proctable_new(&t, 2), 0);
	ck_assert_int_eq(sbxd_proctable_acquire(t), 0);
	ck_assert_int_eq(sbxd_proctable_acquire(t), 0);
	ck_assert_int_eq(sbxd_proctable_acquire(t), ASB_ETOOMANYREQUESTS);
	ck_assert_uint_eq(sbxd_proctable_running(t), 2);
	sbxd_proctable_release(t);
	ck_assert_int_eq(sbxd_proctable_acquire(t), 0);
	int x, y;
	ck_assert_int_eq(sbxd_proctable_add(t, &x), 1);
	ck_assert_int_eq(sbxd_proctable_add(t, &y), 2);
	ck_assert_ptr_eq(sbxd_proctable_get(t, 2), &y);
	sbxd_proctable_remove(t, 1);
	ck_assert_ptr_null(sbxd_proctable_get(t, 1));
	ck_assert_int_eq(sbxd_proctable_add(t, &x), 3);  /* ids are never reused */
	sbxd_proctable_free(t);
}
END_TEST

static void add_tests(TCase *tc)
{
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, output_and_exit_code);
	tcase_add_test(tc, launch_errors);
	tcase_add_test(tc, cwd_and_env);
	tcase_add_test(tc, stdin_pipe_and_eof);
	tcase_add_test(tc, no_stdin_reads_eof);
	tcase_add_test(tc, output_bounded_per_stream);
	tcase_add_test(tc, timeout_kills_group_ignoring_sigterm);
	tcase_add_test(tc, timeout_ends_descendants_that_left_the_session);
	tcase_add_test(tc, free_ends_descendants_that_left_the_session);
	tcase_add_test(tc, background_child_outlives_the_command);
	tcase_add_test(tc, lingering_stops_at_its_bound_and_on_request);
	tcase_add_test(tc, signal_and_free_while_running);
	tcase_add_test(tc, pty_session_with_resize);
	tcase_add_test(tc, resize_without_pty_refused);
	tcase_add_test(tc, keepers_reused_only_when_nothing_is_left);
	tcase_add_test(tc, stale_signal_to_an_idle_keeper_spares_the_next_command);
	tcase_add_test(tc, idle_keeper_killed_is_replaced);
	tcase_add_test(tc, job_bigger_than_one_message);
	tcase_add_test(tc, async_start_then_output_and_exit);
	tcase_add_test(tc, async_start_failure_comes_to_on_start_only);
	tcase_add_test(tc, async_free_before_the_start_kills_the_command);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);  /* as the daemon does; children must not inherit it */
	Suite *s = suite_create("sandboxd_proc");
	TCase *pooled = tcase_create("pooled keepers");
	tcase_add_checked_fixture(pooled, setup_pooled, NULL);
	add_tests(pooled);
	tcase_add_test(pooled, proctable_cap_and_ids);
	suite_add_tcase(s, pooled);
	TCase *fresh = tcase_create("a keeper per command");
	tcase_add_checked_fixture(fresh, setup_fresh, NULL);
	add_tests(fresh);
	suite_add_tcase(s, fresh);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
