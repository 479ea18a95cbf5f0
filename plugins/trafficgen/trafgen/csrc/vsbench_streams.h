/*
 * What vsbench's two paced senders (vsbench_pacer.c, vsbench_xdpgen.c) share: the stream
 * configuration they read, and the summary they print -- one JSON object whose pacing
 * figures come from the 100 us bins in which each counted the frames it handed over.
 * The Python side (plugins/trafficgen/trafgen/pacer.py) writes the one and parses the
 * other, whichever sender ran.
 *
 * The configuration file has one "stream" block per stream (several may leave one port,
 * each to its own destination: a router's traffic profiles):
 *     stream <ifname>
 *     frame <hex bytes of the frame without FCS>
 *     ip <offset of the IPv4 header>
 *     field <offset> <width 2|4> <base> <period>      (zero or more)
 *     run <frames>                                     (optional, default 1)
 *     sizes <len> <len> ...                            (optional: a frame mix)
 * Frame k of a stream carries, in every varying field, base + ((k / run) mod period):
 * run 1 moves to the next flow every frame (scatter), run R sends R frames of each flow in
 * a row (burst). With "sizes" (a frame mix, IMIX), frame k is sizes[k mod n] bytes long
 * (no FCS): the frame cut to that length, its IPv4 total length, UDP length and both
 * checksums set to match, so the sizes alternate in the order listed (the Python side lists
 * one cycle of the mix, interleaved). Every length fits the frame given.
 */
#ifndef VSBENCH_STREAMS_H
#define VSBENCH_STREAMS_H

#include <net/if.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_STREAMS 128
#define MAX_FIELDS 8
#define MAX_SIZES 64
#define MAX_FRAME 9216
#define BIN_NS 100000ULL       /* senders count frames in 100 us bins */
#define WINDOW_NS 10000000ULL  /* pacing is judged per 10 ms window */
/* A frame handed over more than this after its due time is "late": a stall delayed it and
 * the catch-up sent it closer to its neighbours than the rate (the search bounds what such
 * frames can have cost the device by their count). */
#define LATE_FRAME_NS 100000ULL

struct field {
	unsigned offset, width;
	uint64_t base, period;
	int in_ip, in_udp_pseudo, in_udp;
};

/* One port's stream as configured: its template frame and the fields that vary. */
struct stream_spec {
	char ifname[IF_NAMESIZE];
	unsigned char frame[MAX_FRAME];
	unsigned len, ip_off;
	struct field fields[MAX_FIELDS];
	unsigned nfields;
	uint64_t run;       /* consecutive frames of one flow (1: the next flow every frame) */
	uint16_t udp_csum0; /* the template's UDP checksum (0: none, left at 0) */
	unsigned sizes[MAX_SIZES]; /* a frame mix: frame k is sizes[k % nsizes] bytes */
	unsigned nsizes;            /* 0: every frame is len bytes */
};

static void streams_fail(const char *prog, const char *msg)
{
	fprintf(stderr, "%s: %s\n", prog, msg);
	exit(1);
}

static int streams_hexval(int c)
{
	if (c >= '0' && c <= '9') return c - '0';
	if (c >= 'a' && c <= 'f') return c - 'a' + 10;
	if (c >= 'A' && c <= 'F') return c - 'A' + 10;
	return -1;
}

/* Read the configuration at path into out[] (at most MAX_STREAMS); returns the count.
 * Exits with a one-line message (prefixed by prog) on anything malformed. */
static unsigned read_streams(const char *prog, const char *path, struct stream_spec *out)
{
	FILE *f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "%s: %s: cannot open\n", prog, path);
		exit(1);
	}
	static char line[2 * MAX_FRAME + 64];
	unsigned n = 0;
	struct stream_spec *s = NULL;
	while (fgets(line, sizeof(line), f)) {
		char *p = line;
		while (*p == ' ' || *p == '\t') p++;
		if (*p == '#' || *p == '\n' || *p == 0) continue;
		if (!strncmp(p, "stream ", 7)) {
			if (n == MAX_STREAMS) streams_fail(prog, "too many streams (at most 128)");
			s = &out[n++];
			memset(s, 0, sizeof(*s));
			if (sscanf(p + 7, "%15s", s->ifname) != 1) streams_fail(prog, "stream: no interface");
			s->run = 1;
		} else if (!s) {
			streams_fail(prog, "configuration must start with a stream line");
		} else if (!strncmp(p, "frame ", 6)) {
			p += 6;
			unsigned len = 0;
			while (streams_hexval(p[0]) >= 0 && streams_hexval(p[1]) >= 0) {
				if (len == MAX_FRAME) streams_fail(prog, "frame too long");
				s->frame[len++] = (unsigned char)(streams_hexval(p[0]) << 4 | streams_hexval(p[1]));
				p += 2;
			}
			if (len < 42) streams_fail(prog, "frame too short for Ethernet/IPv4/UDP");
			s->len = len;
		} else if (!strncmp(p, "ip ", 3)) {
			s->ip_off = (unsigned)strtoul(p + 3, NULL, 10);
		} else if (!strncmp(p, "field ", 6)) {
			if (s->nfields == MAX_FIELDS) streams_fail(prog, "too many fields");
			struct field *fl = &s->fields[s->nfields++];
			unsigned long long base, period;
			if (sscanf(p + 6, "%u %u %llu %llu", &fl->offset, &fl->width, &base, &period) != 4)
				streams_fail(prog, "field: expected <offset> <width> <base> <period>");
			if (fl->width != 2 && fl->width != 4) streams_fail(prog, "field width must be 2 or 4");
			if (period < 1) streams_fail(prog, "field period must be >= 1");
			fl->base = base;
			fl->period = period;
		} else if (!strncmp(p, "sizes ", 6)) {
			char *q = p + 6, *end;
			s->nsizes = 0;
			for (;;) {
				unsigned long v = strtoul(q, &end, 10);
				if (end == q) break;
				if (s->nsizes == MAX_SIZES) streams_fail(prog, "sizes: at most 64 frames in a mix's cycle");
				if (v < 42 || v > MAX_FRAME) streams_fail(prog, "sizes: a length must be 42..9216 bytes");
				s->sizes[s->nsizes++] = (unsigned)v;
				q = end;
			}
			if (!s->nsizes) streams_fail(prog, "sizes: expected one or more frame lengths");
		} else if (!strncmp(p, "run ", 4)) {
			unsigned long long run;
			if (sscanf(p + 4, "%llu", &run) != 1 || run < 1 || run > 0x7fffffffULL)
				streams_fail(prog, "run: expected a frame count of 1 or more");
			s->run = run;
		} else {
			streams_fail(prog, "unknown configuration line");
		}
	}
	fclose(f);
	if (!n) streams_fail(prog, "no stream in the configuration");
	for (unsigned i = 0; i < n; i++) {
		struct stream_spec *st = &out[i];
		if (!st->len) streams_fail(prog, "stream without a frame");
		if (st->ip_off + 28 > st->len) streams_fail(prog, "IPv4/UDP headers do not fit the frame");
		for (unsigned j = 0; j < st->nsizes; j++)
			if (st->sizes[j] > st->len || st->sizes[j] < st->ip_off + 28)
				streams_fail(prog, "sizes: a length outside the frame's headers..its length");
		unsigned udp = st->ip_off + 20;
		st->udp_csum0 = (uint16_t)(st->frame[udp + 6] << 8 | st->frame[udp + 7]);
		for (unsigned j = 0; j < st->nfields; j++) {
			struct field *fl = &st->fields[j];
			if (fl->offset + fl->width > st->len) streams_fail(prog, "field outside the frame");
			fl->in_ip = fl->offset >= st->ip_off && fl->offset < st->ip_off + 20;
			fl->in_udp_pseudo = fl->offset >= st->ip_off + 12 && fl->offset < st->ip_off + 20;
			fl->in_udp = fl->offset >= udp && fl->offset < udp + 8;
		}
	}
	return n;
}

/* What a sender knows at the end of a run, for its summary. */
struct run_facts {
	uint64_t t0;            /* schedule start (CLOCK_MONOTONIC ns) */
	uint64_t sent, asked;   /* frames handed over / asked for, all streams */
	uint64_t t_first, t_last, t_end; /* first and last hand-over, end of the run (0: none) */
	double rate;            /* aggregate frames/s asked (0: unpaced) */
	uint64_t late_max_ns, max_gap_ns, loops;
	uint64_t late_frames;   /* frames handed over more than LATE_FRAME_NS behind schedule */
	int stopped;            /* SIGTERM/SIGINT ended it early */
	double catchup;         /* -K share */
	uint64_t gated, yields, yield_checks, ring_waits;
};

static double distance(double a, double b) { return a > b ? a - b : b - a; }

/* Frames counted in bins [from, to). */
static uint64_t bin_sum(const uint32_t *bins, size_t from, size_t to)
{
	uint64_t sum = 0;
	for (size_t j = from; j < to; j++) sum += bins[j];
	return sum;
}

/* Print the summary line: what was sent per stream and the pacing figures of the bins --
 * the largest deviation of the schedule's consecutive 10 ms windows from the nominal
 * count (and of any 10 ms window, sliding by one bin), the most frames in any 1 ms; t0_ns
 * (CLOCK_MONOTONIC) places the bins next to a trace of the same run. */
static void print_summary(const struct run_facts *r, const uint32_t *bins, size_t nbins,
			  const char *const *ifnames, const uint64_t *per_stream, unsigned nstreams)
{
	uint64_t t_last = r->t_last ? r->t_last : r->t0;
	size_t used = (size_t)((t_last - r->t0) / BIN_NS) + 1;
	if (used > nbins) used = nbins;
	double nominal_s = r->rate > 0 ? (double)r->asked / r->rate : 0;
	/* 10 ms windows: only those wholly inside the schedule [t0, t0 + asked / rate) */
	size_t full = r->rate > 0 ? (size_t)(nominal_s * 1e9 / BIN_NS) : 0;
	if (full > nbins) full = nbins;
	size_t per_window = (size_t)(WINDOW_NS / BIN_NS), per_ms = (size_t)(1000000ULL / BIN_NS);
	uint64_t max1 = 0, windows = 0, aligned = 0;
	double expect10 = r->rate > 0 ? r->rate * 0.010 : 0;
	double worst10 = 0, worst_aligned = 0;
	for (size_t i = 0; r->rate > 0 && i + per_window <= full; i += per_window) {
		double dev = distance((double)bin_sum(bins, i, i + per_window), expect10);
		if (dev > worst_aligned) worst_aligned = dev;
		aligned++;
	}
	for (size_t i = 0; i < used; i++) {
		uint64_t s1 = bin_sum(bins, i, i + per_ms < used ? i + per_ms : used);
		if (s1 > max1) max1 = s1;
		if (r->rate > 0 && i + per_window <= full) {
			double dev = distance((double)bin_sum(bins, i, i + per_window), expect10);
			if (dev > worst10) worst10 = dev;
			windows++;
		}
	}
	printf("{\"sent\": %llu, \"asked\": %llu, \"streams\": [", (unsigned long long)r->sent,
	       (unsigned long long)r->asked);
	for (unsigned i = 0; i < nstreams; i++)
		printf("%s{\"iface\": \"%s\", \"sent\": %llu}", i ? ", " : "", ifnames[i],
		       (unsigned long long)per_stream[i]);
	printf("], \"rate_fps\": %.3f, \"first_ns\": %llu, \"last_ns\": %llu, \"span_s\": %.9f, "
	       "\"elapsed_s\": %.9f, \"max_frames_1ms\": %llu, \"windows_10ms\": %llu, "
	       "\"max_dev_frames_10ms\": %.1f, \"max_late_ns\": %llu, \"max_gap_ns\": %llu, \"loops\": %llu, "
	       "\"stopped\": %s, \"bin_ns\": %llu, \"yields\": %llu, \"yield_checks\": %llu, \"ring_waits\": %llu, "
	       "\"aligned_windows_10ms\": %llu, "
	       "\"max_dev_frames_aligned_10ms\": %.1f, \"catchup_share\": %.4f, \"catchup_gated\": %llu, "
	       "\"t0_ns\": %llu, \"late_frames\": %llu}\n",
	       r->rate, (unsigned long long)(r->t_first ? r->t_first - r->t0 : 0),
	       (unsigned long long)(t_last - r->t0), (double)(t_last - r->t0) / 1e9,
	       (double)((r->t_end > r->t0 ? r->t_end : r->t0) - r->t0) / 1e9, (unsigned long long)max1,
	       (unsigned long long)windows, worst10, (unsigned long long)r->late_max_ns,
	       (unsigned long long)r->max_gap_ns, (unsigned long long)r->loops, r->stopped ? "true" : "false",
	       (unsigned long long)BIN_NS, (unsigned long long)r->yields, (unsigned long long)r->yield_checks,
	       (unsigned long long)r->ring_waits, (unsigned long long)aligned, worst_aligned, r->catchup,
	       (unsigned long long)r->gated, (unsigned long long)r->t0, (unsigned long long)r->late_frames);
	fflush(stdout);
}

#endif
