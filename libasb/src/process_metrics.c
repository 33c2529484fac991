/*
 * process_metrics.c - the process_* families of client_golang's process
 * collector (prometheus.NewProcessCollector, the one controller-runtime
 * registers), read from /proc at each scrape as prometheus/procfs reads
 * them: same names, help texts, types and units, so dashboards and alerts
 * written for a Go binary work on ours. See asb/metrics.h and
 * process_metrics.h.
 *
 * Each family has its own collector, which reads only the file(s) it needs:
 * a scrape reads /proc/self/stat four times (it is small) rather than
 * sharing a reading between collectors, which would need state tied to
 * the scrape.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>
#include "asb/strbuf.h"
#include "process_metrics.h"

/* --- parsers ----------------------------------------------------------------- */

static int bad(const char *file, const char *what)
{
	return asb_error_set(ASB_EDECODE, 0, NULL, "%s: %s", file, what);
}

int asb__proc_parse_stat(const char *text, asb__proc_stat *out)
{
	/* the command name may hold ") ": the fields go on after the last ')' */
	const char *p = text ? strrchr(text, ')') : NULL;
	if (!p)
		return bad("stat", "no ')' closing the command name");
	p++;
	memset(out, 0, sizeof(*out));
	int seen = 0;
	for (int field = 3; field <= 24; field++) {
		while (*p == ' ')
			p++;
		if (!*p || *p == '\n')
			break;
		const char *tok = p;
		while (*p && *p != ' ' && *p != '\n')
			p++;
		if (field < 14 || (field > 15 && field < 22))
			continue;
		char *end;
		errno = 0;
		if (field == 24) {
			long long v = strtoll(tok, &end, 10);
			out->rss = v;
		} else {
			unsigned long long v = strtoull(tok, &end, 10);
			if (field == 14)
				out->utime = v;
			else if (field == 15)
				out->stime = v;
			else if (field == 22)
				out->starttime = v;
			else
				out->vsize = v;
		}
		if (end != p || errno || (*tok == '-' && field != 24))
			return bad("stat", "a field that is not a decimal number");
		seen++;
	}
	return seen == 5 ? 0 : bad("stat", "fewer than 24 fields");
}

int asb__proc_parse_btime(const char *text, uint64_t *out)
{
	for (const char *line = text; line && *line; ) {
		if (strncmp(line, "btime ", 6) == 0) {
			char *end;
			errno = 0;
			unsigned long long v = strtoull(line + 6, &end, 10);
			if (errno || end == line + 6 || (*end && *end != '\n') || line[6] == '-')
				return bad("/proc/stat", "btime is not a decimal number");
			*out = v;
			return 0;
		}
		line = strchr(line, '\n');
		if (line)
			line++;
	}
	return bad("/proc/stat", "no btime line");
}

int asb__proc_parse_limit(const char *text, const char *name, double *out)
{
	size_t n = strlen(name);
	for (const char *line = text; line && *line; ) {
		if (strncmp(line, name, n) == 0 && line[n] == ' ') {
			const char *p = line + n;
			while (*p == ' ')
				p++;
			if (strncmp(p, "unlimited", 9) == 0 && (p[9] == ' ' || p[9] == '\n' || !p[9])) {
				*out = 18446744073709551615.0;
				return 0;
			}
			char *end;
			errno = 0;
			unsigned long long v = strtoull(p, &end, 10);
			if (errno || end == p || *p == '-' || (*end != ' ' && *end != '\n' && *end))
				return bad("limits", "a soft limit that is neither a number nor unlimited");
			*out = (double)v;
			return 0;
		}
		line = strchr(line, '\n');
		if (line)
			line++;
	}
	return asb_error_set(ASB_EDECODE, 0, NULL, "limits: no \"%s\" line", name);
}

/* The index of `word` among the space-separated words of [line, eol), or -1. */
static int word_index(const char *line, const char *eol, const char *word)
{
	size_t n = strlen(word);
	int i = 0;
	for (const char *p = line; p < eol; i++) {
		while (p < eol && *p == ' ')
			p++;
		const char *w = p;
		while (p < eol && *p != ' ')
			p++;
		if ((size_t)(p - w) == n && memcmp(w, word, n) == 0)
			return i;
	}
	return -1;
}

/* The `index`-th word of [line, eol) as a number; false when missing. */
static bool word_number(const char *line, const char *eol, int index, double *out)
{
	const char *p = line;
	for (int i = 0; p < eol; i++) {
		while (p < eol && *p == ' ')
			p++;
		const char *w = p;
		while (p < eol && *p != ' ')
			p++;
		if (i == index) {
			char *end;
			errno = 0;
			unsigned long long v = strtoull(w, &end, 10);
			if (errno || end != p || w == p || *w == '-')
				return false;
			*out = (double)v;
			return true;
		}
	}
	return false;
}

int asb__proc_parse_netstat(const char *text, double *in, double *out)
{
	*in = *out = 0;
	/* "IpExt: <names>\nIpExt: <values>\n"; word 0 is the "IpExt:" prefix */
	const char *head = text;
	while (head && *head && strncmp(head, "IpExt:", 6) != 0) {
		head = strchr(head, '\n');
		if (head)
			head++;
	}
	if (!head || !*head)
		return 0;
	const char *head_end = strchr(head, '\n');
	if (!head_end)
		return bad("netstat", "IpExt names without a line of values");
	const char *vals = head_end + 1;
	if (strncmp(vals, "IpExt:", 6) != 0)
		return bad("netstat", "IpExt names without a line of values");
	const char *vals_end = strchr(vals, '\n');
	if (!vals_end)
		vals_end = vals + strlen(vals);
	int i_in = word_index(head, head_end, "InOctets");
	int i_out = word_index(head, head_end, "OutOctets");
	if ((i_in >= 0 && !word_number(vals, vals_end, i_in, in)) ||
	    (i_out >= 0 && !word_number(vals, vals_end, i_out, out)))
		return bad("netstat", "an IpExt value that is not a decimal number");
	return 0;
}

/* --- reading ----------------------------------------------------------------- */

/* The whole of a (small) file, NUL-terminated; NULL when it cannot be read. */
static char *slurp(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	asb_strbuf b = ASB_STRBUF_INIT;
	char chunk[4096];
	ssize_t n = 0;
	/* procfs files are generated per read call: read to EOF; 4 MiB is far
	 * more than any of these files holds */
	while (b.len < (4u << 20) && ((n = read(fd, chunk, sizeof(chunk))) > 0 ||
	                              (n < 0 && errno == EINTR)))
		if (n > 0)
			asb_strbuf_add(&b, chunk, (size_t)n);
	close(fd);
	if (n < 0 || b.failed) {
		asb_strbuf_free(&b);
		return NULL;
	}
	if (!b.data)
		asb_strbuf_adds(&b, "");
	return asb_strbuf_detach(&b, NULL);
}

static bool count_fds(const char *dir, double *out)
{
	/* Linux 6.2+ gives the count as the size of procfs' fd directory; stat
	 * without opening, so the count does not include a descriptor of ours */
	struct stat st;
	struct statfs sfs;
	if (stat(dir, &st) == 0 && st.st_size > 0 && statfs(dir, &sfs) == 0 &&
	    sfs.f_type == PROC_SUPER_MAGIC) {
		*out = (double)st.st_size;
		return true;
	}
	DIR *d = opendir(dir);
	if (!d)
		return false;
	double n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			n++;
	closedir(d);
	*out = n;
	return true;
}

void asb__proc_read(const char *root, unsigned int what, asb__proc_figures *out)
{
	memset(out, 0, sizeof(*out));
	char path[4096];
	if (what & ASB__PROC_STAT) {
		snprintf(path, sizeof(path), "%s/self/stat", root);
		char *stat_text = slurp(path);
		snprintf(path, sizeof(path), "%s/stat", root);
		char *sys_text = stat_text ? slurp(path) : NULL;
		asb__proc_stat st;
		uint64_t btime;
		long hz = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
		if (stat_text && sys_text && hz > 0 && page > 0 &&
		    asb__proc_parse_stat(stat_text, &st) == 0 &&
		    asb__proc_parse_btime(sys_text, &btime) == 0) {
			out->cpu_seconds = (double)(st.utime + st.stime) / (double)hz;
			out->resident_bytes = (double)st.rss * (double)page;
			out->virtual_bytes = (double)st.vsize;
			out->start_time_seconds = (double)btime + (double)st.starttime / (double)hz;
			out->have |= ASB__PROC_STAT;
		}
		free(stat_text);
		free(sys_text);
	}
	if (what & ASB__PROC_FDS) {
		snprintf(path, sizeof(path), "%s/self/fd", root);
		if (count_fds(path, &out->open_fds))
			out->have |= ASB__PROC_FDS;
	}
	if (what & ASB__PROC_LIMITS) {
		snprintf(path, sizeof(path), "%s/self/limits", root);
		char *text = slurp(path);
		if (text && asb__proc_parse_limit(text, "Max open files", &out->max_fds) == 0 &&
		    asb__proc_parse_limit(text, "Max address space", &out->max_virtual_bytes) == 0)
			out->have |= ASB__PROC_LIMITS;
		free(text);
	}
	if (what & ASB__PROC_NETSTAT) {
		snprintf(path, sizeof(path), "%s/self/net/netstat", root);
		char *text = slurp(path);
		if (text && asb__proc_parse_netstat(text, &out->network_receive_bytes,
		                                    &out->network_transmit_bytes) == 0)
			out->have |= ASB__PROC_NETSTAT;
		free(text);
	}
}

/* --- the families -------------------------------------------------------------- */

typedef struct {
	const char *name;
	const char *help;          /* client_golang's text */
	asb_metric_type type;
	unsigned int part;         /* ASB__PROC_* */
	size_t field;              /* offsetof(asb__proc_figures, ...) */
	asb_metric_collect_fn fn;
} process_family;

static void collect(asb_metrics_emitter *e, const char *root, const process_family *f)
{
	asb__proc_figures fig;
	asb__proc_read(root, f->part, &fig);
	if (fig.have & f->part)
		asb_metrics_emit(e, NULL, 0, *(const double *)((const char *)&fig + f->field));
}

static const process_family families[9];

/* one collector function per family: the userdata is the /proc root */
static void c_cpu(asb_metrics_emitter *e, void *root) { collect(e, root, &families[0]); }
static void c_open(asb_metrics_emitter *e, void *root) { collect(e, root, &families[1]); }
static void c_max(asb_metrics_emitter *e, void *root) { collect(e, root, &families[2]); }
static void c_vsize(asb_metrics_emitter *e, void *root) { collect(e, root, &families[3]); }
static void c_maxvsize(asb_metrics_emitter *e, void *root) { collect(e, root, &families[4]); }
static void c_rss(asb_metrics_emitter *e, void *root) { collect(e, root, &families[5]); }
static void c_start(asb_metrics_emitter *e, void *root) { collect(e, root, &families[6]); }
static void c_in(asb_metrics_emitter *e, void *root) { collect(e, root, &families[7]); }
static void c_out(asb_metrics_emitter *e, void *root) { collect(e, root, &families[8]); }

#define FIG(x) offsetof(asb__proc_figures, x)
static const process_family families[9] = {
	{ "process_cpu_seconds_total", "Total user and system CPU time spent in seconds.",
	  ASB_METRIC_COUNTER, ASB__PROC_STAT, FIG(cpu_seconds), c_cpu },
	{ "process_open_fds", "Number of open file descriptors.",
	  ASB_METRIC_GAUGE, ASB__PROC_FDS, FIG(open_fds), c_open },
	{ "process_max_fds", "Maximum number of open file descriptors.",
	  ASB_METRIC_GAUGE, ASB__PROC_LIMITS, FIG(max_fds), c_max },
	{ "process_virtual_memory_bytes", "Virtual memory size in bytes.",
	  ASB_METRIC_GAUGE, ASB__PROC_STAT, FIG(virtual_bytes), c_vsize },
	{ "process_virtual_memory_max_bytes", "Maximum amount of virtual memory available in bytes.",
	  ASB_METRIC_GAUGE, ASB__PROC_LIMITS, FIG(max_virtual_bytes), c_maxvsize },
	{ "process_resident_memory_bytes", "Resident memory size in bytes.",
	  ASB_METRIC_GAUGE, ASB__PROC_STAT, FIG(resident_bytes), c_rss },
	{ "process_start_time_seconds", "Start time of the process since unix epoch in seconds.",
	  ASB_METRIC_GAUGE, ASB__PROC_STAT, FIG(start_time_seconds), c_start },
	{ "process_network_receive_bytes_total",
	  "Number of bytes received by the process over the network.",
	  ASB_METRIC_COUNTER, ASB__PROC_NETSTAT, FIG(network_receive_bytes), c_in },
	{ "process_network_transmit_bytes_total",
	  "Number of bytes sent by the process over the network.",
	  ASB_METRIC_COUNTER, ASB__PROC_NETSTAT, FIG(network_transmit_bytes), c_out },
};
#undef FIG

int asb__metrics_register_process_at(asb_metrics_registry *r, const char *root)
{
	if (!r || !root)
		return asb_error_set(ASB_EINVAL, 0, NULL, "process metrics: registry and /proc root are required");
	for (size_t i = 0; i < sizeof(families) / sizeof(families[0]); i++) {
		const process_family *f = &families[i];
		asb_metric_options o = ASB_METRIC_OPTIONS_INIT;
		o.type = f->type;
		o.name = f->name;
		o.help = f->help;
		asb_metric *m;
		int rc = asb_metrics_register(&m, r, &o);
		if (rc < 0)
			return rc;
		/* a second registration replaces the first: no duplicate samples */
		asb_metric_remove_collector(m, f->fn, (void *)root);
		if ((rc = asb_metric_add_collector(m, f->fn, (void *)root)) < 0)
			return rc;
	}
	return 0;
}

int asb_metrics_register_process(asb_metrics_registry *r)
{
	return asb__metrics_register_process_at(r, "/proc");
}
