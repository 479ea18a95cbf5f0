/*
 * vsbench-xdpgen: the embedded generator's in-kernel paced sender (vsbench trafficgen
 * "trafgen", engine "xdp"). One process, one CPU, up to MAX_STREAMS streams (frame k goes
 * to stream k mod n; several streams may leave one port).
 *
 * Why it exists: every sender that hands frames to the kernel from user space (trafgen,
 * vsbench-pacer) pays a system call, a socket buffer and a copy per batch of frames, and
 * is a user task that other tasks on its CPU preempt for milliseconds at a time; on the
 * 2-core VMs vsbench is developed on that kept them near 1 Mpps of 64 B frames into a
 * bare veth and let a paced trial fall behind its schedule. This sender runs the whole
 * trial as ONE BPF_PROG_TEST_RUN of an XDP program in "live frames" mode
 * (BPF_F_TEST_XDP_LIVE_FRAMES, Linux >= 5.18): the kernel runs the program over and over
 * on a frame from a page pool, and every frame the program lets out is transmitted with
 * XDP (bpf_redirect_map into a device map: ndo_xdp_xmit, no socket, no copy from user
 * space). The program is the pacer: frame k (all streams, in turn) is due at
 * t0 + k / rate by bpf_ktime_get_ns(); a run before its frame is due drops its frame
 * (nothing is sent), a run at or after it writes the stream's template, the frame's
 * varying fields and checksums, counts it in a 100 us bin and sends it. Behind schedule
 * (after a stall) it catches up at most (1 + -K) x the rate.
 *
 * A veth delivers XDP frames only to a peer in NAPI mode (GRO on, or an XDP program on
 * it): the plugin switches the peers' GRO on for the trial. Frames must fit one page
 * (the kernel refuses live frames larger than that).
 *
 * The program is assembled here, instruction by instruction (no compiler for BPF is
 * needed at run time); only the kernel's verifier checks it.
 *
 * Protocol (the same as vsbench-pacer's, so the plugin drives both alike): -c config
 * (vsbench_streams.h), -n frames per stream, -r aggregate frames/s (0: as fast as it
 * goes), [-C cpu] [-K catch-up share] [-b live batch] [-N nice] [-B bins file] [-w].
 * With -w it prints "ready" once the program is loaded and waits for a line on stdin;
 * it prints "running" when it starts and, at the end, one JSON summary on stdout.
 * SIGTERM/SIGINT stop it early (the summary says so). Exit 0 when every frame was sent,
 * 3 when stopped early, 1 on an error. --probe: exit 0 if this kernel runs live XDP
 * frames (a one-run test on "lo"), else 1 with the reason.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <linux/bpf.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "vsbench_streams.h"

#ifndef BPF_F_TEST_XDP_LIVE_FRAMES
#define BPF_F_TEST_XDP_LIVE_FRAMES (1U << 1)
#endif

static const char PROG[] = "vsbench-xdpgen";
/* Bytes of each frame rewritten from its stream's template on every send: a page comes
 * back from its last trip with whatever the receivers changed (a router's MACs and TTL),
 * and two streams share one page pool. Payload beyond this is the same in every stream. */
#define REWRITE_BYTES 128u

/* The parameters map's one value (offsets used by the program). */
enum { P_T0 = 0, P_PS = 8, P_TOTAL = 16, P_K = 24, P_LAST = 32, P_GAP = 40, P_LATE = 48, P_FIRST = 56,
       P_TAT = 64, P_TAU = 72, P_LATE_FRAMES = 80, P_SIZE = 88 };

static volatile sig_atomic_t stop_flag;
static void on_stop(int sig) { (void)sig; stop_flag = 1; }
static void on_wake(int sig) { (void)sig; }

static void die(const char *what)
{
	fprintf(stderr, "%s: %s: %s\n", PROG, what, strerror(errno));
	exit(1);
}

static void fail(const char *msg)
{
	fprintf(stderr, "%s: %s\n", PROG, msg);
	exit(1);
}

static inline uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static long sys_bpf(int cmd, union bpf_attr *attr)
{
	return syscall(__NR_bpf, cmd, attr, sizeof(*attr));
}

static int map_create(unsigned type, unsigned key_size, unsigned value_size, unsigned entries)
{
	union bpf_attr a;
	memset(&a, 0, sizeof(a));
	a.map_type = type;
	a.key_size = key_size;
	a.value_size = value_size;
	a.max_entries = entries;
	int fd = (int)sys_bpf(BPF_MAP_CREATE, &a);
	if (fd < 0) die("BPF_MAP_CREATE");
	return fd;
}

static void map_update(int fd, const void *key, const void *value)
{
	union bpf_attr a;
	memset(&a, 0, sizeof(a));
	a.map_fd = (uint32_t)fd;
	a.key = (uint64_t)(uintptr_t)key;
	a.value = (uint64_t)(uintptr_t)value;
	if (sys_bpf(BPF_MAP_UPDATE_ELEM, &a) < 0) die("BPF_MAP_UPDATE_ELEM");
}

static int map_lookup(int fd, const void *key, void *value)
{
	union bpf_attr a;
	memset(&a, 0, sizeof(a));
	a.map_fd = (uint32_t)fd;
	a.key = (uint64_t)(uintptr_t)key;
	a.value = (uint64_t)(uintptr_t)value;
	return (int)sys_bpf(BPF_MAP_LOOKUP_ELEM, &a);
}

/* -- a tiny assembler ------------------------------------------------------------------ */

#define MAX_INSNS 32767 /* jump offsets are 16 bits */
static struct bpf_insn prog[MAX_INSNS];
static unsigned ninsns;

/* Jumps to labels are patched once the label's position is known. */
#define MAX_LABELS 1024
#define MAX_FIXUPS 2048
static int label_at[MAX_LABELS];
static struct { unsigned insn; int label; } fixups[MAX_FIXUPS];
static unsigned nfixups, nlabels;

static void emit(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm)
{
	if (ninsns == MAX_INSNS) fail("program too long");
	prog[ninsns++] = (struct bpf_insn){.code = code, .dst_reg = dst, .src_reg = src, .off = off, .imm = imm};
}

static int new_label(void)
{
	if (nlabels == MAX_LABELS) fail("too many labels");
	label_at[nlabels] = -1;
	return (int)nlabels++;
}

static void place(int label) { label_at[label] = (int)ninsns; }

static void jump_to(int label)
{
	if (nfixups == MAX_FIXUPS) fail("too many jumps");
	fixups[nfixups].insn = ninsns - 1;
	fixups[nfixups++].label = label;
}

static void resolve_labels(void)
{
	for (unsigned i = 0; i < nfixups; i++) {
		int at = label_at[fixups[i].label];
		if (at < 0) fail("jump to an unplaced label");
		prog[fixups[i].insn].off = (int16_t)(at - (int)fixups[i].insn - 1);
	}
}

static void mov_reg(int dst, int src) { emit(BPF_ALU64 | BPF_MOV | BPF_X, dst, src, 0, 0); }
static void mov_imm(int dst, int32_t imm) { emit(BPF_ALU64 | BPF_MOV | BPF_K, dst, 0, 0, imm); }
static void alu_imm(int op, int dst, int32_t imm) { emit(BPF_ALU64 | op | BPF_K, dst, 0, 0, imm); }
static void alu_reg(int op, int dst, int src) { emit(BPF_ALU64 | op | BPF_X, dst, src, 0, 0); }
static void ldx(int size, int dst, int src, int16_t off) { emit(BPF_LDX | size | BPF_MEM, dst, src, off, 0); }
static void stx(int size, int dst, int src, int16_t off) { emit(BPF_STX | size | BPF_MEM, dst, src, off, 0); }
static void st_imm(int size, int dst, int16_t off, int32_t imm) { emit(BPF_ST | size | BPF_MEM, dst, 0, off, imm); }
static void call(int32_t helper) { emit(BPF_JMP | BPF_CALL, 0, 0, 0, helper); }
static void exit_insn(void) { emit(BPF_JMP | BPF_EXIT, 0, 0, 0, 0); }
static void jmp_imm(int op, int dst, int32_t imm, int label) { emit(BPF_JMP | op | BPF_K, dst, 0, 0, imm); jump_to(label); }
static void jmp_reg(int op, int dst, int src, int label) { emit(BPF_JMP | op | BPF_X, dst, src, 0, 0); jump_to(label); }
static void jmp(int label) { emit(BPF_JMP | BPF_JA, 0, 0, 0, 0); jump_to(label); }
static void ld_imm64(int dst, uint64_t v)
{
	emit(BPF_LD | BPF_DW | BPF_IMM, dst, 0, 0, (int32_t)(uint32_t)v);
	emit(0, 0, 0, 0, (int32_t)(uint32_t)(v >> 32));
}
static void ld_map(int dst, int fd)
{
	emit(BPF_LD | BPF_DW | BPF_IMM, dst, BPF_PSEUDO_MAP_FD, 0, fd);
	emit(0, 0, 0, 0, 0);
}
static void bswap(int dst, int bits) { emit(BPF_ALU | BPF_END | BPF_TO_BE, dst, 0, 0, bits); }

/* Fold the 32+ bit ones' complement sum in dst to 16 bits (clobbers tmp). */
static void fold16(int dst, int tmp)
{
	for (int i = 0; i < 3; i++) {
		mov_reg(tmp, dst);
		alu_imm(BPF_RSH, tmp, 16);
		alu_imm(BPF_AND, dst, 0xffff);
		alu_reg(BPF_ADD, dst, tmp);
	}
}

/* A 16-bit word of a frame as the program's little-endian load sees it. The Internet
 * checksum is the same computed on byte-swapped words, stored back the same way. */
static uint32_t le16(const unsigned char *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }

/* Registers: r6 frame data (bounds-checked), r7 parameters, r8 now (ns), r9 k. */
enum { R_PKT = 6, R_PAR = 7, R_NOW = 8, R_K = 9 };

/* Does any stream's template differ from s's in bytes [at, at + n)? */
static int differs(const struct stream_spec *streams, unsigned nstreams, const struct stream_spec *s, unsigned at,
		   unsigned n)
{
	for (unsigned i = 0; i < nstreams; i++)
		if (memcmp(streams[i].frame + at, s->frame + at, n)) return 1;
	return 0;
}

/* Write stream s's frame k/nstreams into the frame at r6: template bytes (the first
 * REWRITE_BYTES, and any other word where the streams' templates differ), fields,
 * checksums. */
static void emit_stream(const struct stream_spec *streams, unsigned nstreams, const struct stream_spec *s)
{
	unsigned i = 0;
	for (; i + 4 <= s->len; i += 4) {
		if (i >= REWRITE_BYTES && !differs(streams, nstreams, s, i, 4)) continue;
		uint32_t w;
		memcpy(&w, s->frame + i, 4);
		st_imm(BPF_W, R_PKT, (int16_t)i, (int32_t)w);
	}
	for (; i < s->len; i++)
		if (i < REWRITE_BYTES || differs(streams, nstreams, s, i, 1)) st_imm(BPF_B, R_PKT, (int16_t)i, s->frame[i]);
	int ip_touched = 0, udp_touched = 0;
	for (unsigned f = 0; f < s->nfields; f++) {
		const struct field *fl = &s->fields[f];
		if (fl->period > 1) {
			mov_reg(1, R_K);
			if (nstreams > 1) alu_imm(BPF_DIV, 1, (int32_t)nstreams); /* frame index within the stream */
			if (s->run > 1) alu_imm(BPF_DIV, 1, (int32_t)s->run); /* burst: run frames per flow */
			if (fl->period <= 0x7fffffffULL) {
				alu_imm(BPF_MOD, 1, (int32_t)fl->period);
			} else {
				ld_imm64(2, fl->period);
				alu_reg(BPF_MOD, 1, 2);
			}
			ld_imm64(2, fl->base);
			alu_reg(BPF_ADD, 1, 2);
		} else {
			ld_imm64(1, fl->base);
		}
		bswap(1, fl->width == 4 ? 32 : 16);
		stx(fl->width == 4 ? BPF_W : BPF_H, R_PKT, 1, (int16_t)fl->offset);
		ip_touched |= fl->in_ip;
		udp_touched |= fl->in_udp_pseudo || fl->in_udp;
	}
	unsigned ip = s->ip_off;
	if (ip_touched) { /* recompute the IPv4 header checksum */
		st_imm(BPF_H, R_PKT, (int16_t)(ip + 10), 0);
		mov_imm(1, 0);
		for (unsigned w = 0; w < 10; w++) {
			ldx(BPF_H, 2, R_PKT, (int16_t)(ip + 2 * w));
			alu_reg(BPF_ADD, 1, 2);
		}
		fold16(1, 2);
		alu_imm(BPF_XOR, 1, 0xffff);
		stx(BPF_H, R_PKT, 1, (int16_t)(ip + 10));
	}
	if (udp_touched && s->udp_csum0) {
		/* RFC 1624: HC' = ~(~HC + sum(~m) + sum(m')) over the words the fields changed;
		 * ~HC + sum(~m) is a constant of the template. */
		unsigned udp = ip + 20;
		uint32_t k = (~le16(s->frame + udp + 6)) & 0xffff;
		for (unsigned f = 0; f < s->nfields; f++) {
			const struct field *fl = &s->fields[f];
			if (!(fl->in_udp_pseudo || fl->in_udp)) continue;
			for (unsigned w = 0; w < fl->width; w += 2) k += (~le16(s->frame + fl->offset + w)) & 0xffff;
		}
		mov_imm(1, (int32_t)k);
		for (unsigned f = 0; f < s->nfields; f++) {
			const struct field *fl = &s->fields[f];
			if (!(fl->in_udp_pseudo || fl->in_udp)) continue;
			for (unsigned w = 0; w < fl->width; w += 2) {
				ldx(BPF_H, 2, R_PKT, (int16_t)(fl->offset + w));
				alu_reg(BPF_ADD, 1, 2);
			}
		}
		fold16(1, 2);
		alu_imm(BPF_XOR, 1, 0xffff);
		int nonzero = new_label();
		jmp_imm(BPF_JNE, 1, 0, nonzero);
		mov_imm(1, 0xffff); /* a computed 0 is sent as 0xffff (0 means "no checksum") */
		place(nonzero);
		stx(BPF_H, R_PKT, 1, (int16_t)(udp + 6));
	}
}

/* Streams lo .. hi-1 by the stream index in r1 (k mod nstreams): a binary tree of
 * comparisons, each leaf writing its stream's frame and its index at fp-8, then to commit. */
static void emit_dispatch(const struct stream_spec *streams, unsigned nstreams, unsigned lo, unsigned hi, int commit)
{
	if (hi - lo == 1) {
		emit_stream(streams, nstreams, &streams[lo]);
		st_imm(BPF_W, 10, -8, (int32_t)lo);
		jmp(commit);
		return;
	}
	unsigned mid = lo + (hi - lo) / 2;
	int upper = new_label();
	jmp_imm(BPF_JGE, 1, (int32_t)mid, upper);
	emit_dispatch(streams, nstreams, lo, mid, commit);
	place(upper);
	emit_dispatch(streams, nstreams, mid, hi, commit);
}

/* The sender program. Maps: params (array, one P_SIZE value), bins (array of u32 per
 * 100 us), devmap (stream index -> ifindex). */
static void build_program(const struct stream_spec *streams, unsigned nstreams, int params_fd, int bins_fd,
			  int devmap_fd, uint32_t nbins)
{
	int drop = new_label(), have_t0 = new_label(), send = new_label(), commit = new_label();
	unsigned len = streams[0].len;
	mov_reg(R_PKT, 1); /* ctx, until the frame pointers are loaded */
	st_imm(BPF_W, 10, -4, 0);
	ld_map(1, params_fd);
	mov_reg(2, 10);
	alu_imm(BPF_ADD, 2, -4);
	call(BPF_FUNC_map_lookup_elem);
	jmp_imm(BPF_JEQ, 0, 0, drop);
	mov_reg(R_PAR, 0);
	ldx(BPF_DW, R_K, R_PAR, P_K);
	ldx(BPF_DW, 1, R_PAR, P_TOTAL);
	jmp_reg(BPF_JGE, R_K, 1, drop); /* every frame sent: the rest of the runs drop theirs */
	call(BPF_FUNC_ktime_get_ns);
	mov_reg(R_NOW, 0);
	ldx(BPF_DW, 1, R_PAR, P_T0);
	jmp_imm(BPF_JNE, 1, 0, have_t0);
	mov_reg(1, R_NOW); /* the first run starts the schedule */
	stx(BPF_DW, R_PAR, 1, P_T0);
	place(have_t0);
	ldx(BPF_DW, 2, R_PAR, P_PS);
	jmp_imm(BPF_JEQ, 2, 0, send); /* unpaced */
	mov_reg(3, R_K); /* due = t0 + k * ps / 1000 */
	alu_reg(BPF_MUL, 3, 2);
	alu_imm(BPF_DIV, 3, 1000);
	alu_reg(BPF_ADD, 3, 1);
	jmp_reg(BPF_JGT, 3, R_NOW, drop); /* not due yet */
	/* Behind schedule (after a stall), the catch-up is paced too: a generic cell rate
	 * algorithm with emission interval P_GAP (ps) and tolerance P_TAU lets at most
	 * (1 + -K) x the rate through, after a burst of the tolerance's frames. On schedule it
	 * never binds (frames are due further apart than P_GAP). */
	ldx(BPF_DW, 4, R_PAR, P_GAP);
	int no_gap = new_label(), keep_tat = new_label();
	jmp_imm(BPF_JEQ, 4, 0, no_gap);
	mov_reg(5, R_NOW); /* x = (now - t0) in ps */
	alu_reg(BPF_SUB, 5, 1);
	alu_imm(BPF_MUL, 5, 1000);
	ldx(BPF_DW, 0, R_PAR, P_TAT);
	ldx(BPF_DW, 2, R_PAR, P_TAU);
	alu_reg(BPF_ADD, 2, 5);
	jmp_reg(BPF_JLT, 2, 0, drop); /* x < TAT - tau: faster than the catch-up allows */
	jmp_reg(BPF_JGE, 0, 5, keep_tat);
	mov_reg(0, 5);
	place(keep_tat);
	alu_reg(BPF_ADD, 0, 4); /* TAT = max(TAT, x) + interval */
	stx(BPF_DW, R_PAR, 0, P_TAT);
	place(no_gap);
	mov_reg(4, R_NOW); /* lateness of this frame */
	alu_reg(BPF_SUB, 4, 3);
	int on_time = new_label();
	jmp_imm(BPF_JLE, 4, (int32_t)LATE_FRAME_NS, on_time);
	ldx(BPF_DW, 5, R_PAR, P_LATE_FRAMES);
	alu_imm(BPF_ADD, 5, 1);
	stx(BPF_DW, R_PAR, 5, P_LATE_FRAMES);
	place(on_time);
	ldx(BPF_DW, 5, R_PAR, P_LATE);
	jmp_reg(BPF_JLE, 4, 5, send);
	stx(BPF_DW, R_PAR, 4, P_LATE);
	place(send);
	ldx(BPF_W, 2, R_PKT, 0); /* ctx->data */
	ldx(BPF_W, 3, R_PKT, 4); /* ctx->data_end */
	mov_reg(R_PKT, 2);
	mov_reg(4, 2);
	alu_imm(BPF_ADD, 4, (int32_t)len);
	jmp_reg(BPF_JGT, 4, 3, drop);
	if (nstreams > 1) {
		mov_reg(1, R_K);
		alu_imm(BPF_MOD, 1, (int32_t)nstreams);
		emit_dispatch(streams, nstreams, 0, nstreams, commit);
	} else {
		emit_stream(streams, nstreams, &streams[0]);
		st_imm(BPF_W, 10, -8, 0);
	}
	place(commit);
	mov_reg(1, R_K);
	alu_imm(BPF_ADD, 1, 1);
	stx(BPF_DW, R_PAR, 1, P_K);
	stx(BPF_DW, R_PAR, R_NOW, P_LAST);
	ldx(BPF_DW, 1, R_PAR, P_FIRST);
	int first_known = new_label();
	jmp_imm(BPF_JNE, 1, 0, first_known);
	stx(BPF_DW, R_PAR, R_NOW, P_FIRST);
	place(first_known);
	mov_reg(1, R_NOW); /* bins[(now - t0) / BIN_NS] += 1 */
	ldx(BPF_DW, 2, R_PAR, P_T0);
	alu_reg(BPF_SUB, 1, 2);
	alu_imm(BPF_DIV, 1, (int32_t)BIN_NS);
	int in_range = new_label();
	jmp_imm(BPF_JLT, 1, (int32_t)nbins, in_range);
	mov_imm(1, (int32_t)(nbins - 1));
	place(in_range);
	stx(BPF_W, 10, 1, -12);
	ld_map(1, bins_fd);
	mov_reg(2, 10);
	alu_imm(BPF_ADD, 2, -12);
	call(BPF_FUNC_map_lookup_elem);
	int counted = new_label();
	jmp_imm(BPF_JEQ, 0, 0, counted);
	ldx(BPF_W, 1, 0, 0);
	alu_imm(BPF_ADD, 1, 1);
	stx(BPF_W, 0, 1, 0);
	place(counted);
	ld_map(1, devmap_fd);
	ldx(BPF_W, 2, 10, -8);
	mov_imm(3, 0);
	call(BPF_FUNC_redirect_map);
	exit_insn();
	place(drop);
	mov_imm(0, XDP_DROP);
	exit_insn();
	resolve_labels();
}

static int load_program(void)
{
	static char log[1 << 16];
	union bpf_attr a;
	memset(&a, 0, sizeof(a));
	a.prog_type = BPF_PROG_TYPE_XDP;
	a.insns = (uint64_t)(uintptr_t)prog;
	a.insn_cnt = ninsns;
	a.license = (uint64_t)(uintptr_t)"GPL";
	a.log_buf = (uint64_t)(uintptr_t)log;
	a.log_size = sizeof(log);
	a.log_level = 1;
	int fd = (int)sys_bpf(BPF_PROG_LOAD, &a);
	if (fd < 0) {
		int e = errno;
		char *last = log, *p;
		while ((p = strstr(last, "\n")) && p[1]) last = p + 1; /* the verifier's last line */
		fprintf(stderr, "%s: the kernel refused the sender program: %s%s%s", PROG, strerror(e),
			*log ? " -- " : "", *log ? last : "\n");
		exit(1);
	}
	return fd;
}

/* One live-frames run of prog_fd over frame (len bytes) arriving at ifindex: -1 and errno
 * on failure. repeat runs, batch_size frames between transmit flushes. */
static int test_run(int prog_fd, const unsigned char *frame, unsigned len, unsigned ifindex, uint32_t repeat,
		    uint32_t batch)
{
	struct xdp_md ctx;
	memset(&ctx, 0, sizeof(ctx));
	ctx.data_end = len;
	ctx.ingress_ifindex = ifindex;
	union bpf_attr a;
	memset(&a, 0, sizeof(a));
	a.test.prog_fd = (uint32_t)prog_fd;
	a.test.data_in = (uint64_t)(uintptr_t)frame;
	a.test.data_size_in = len;
	a.test.ctx_in = (uint64_t)(uintptr_t)&ctx;
	a.test.ctx_size_in = sizeof(ctx);
	a.test.repeat = repeat;
	a.test.flags = BPF_F_TEST_XDP_LIVE_FRAMES;
	a.test.batch_size = batch;
	return (int)sys_bpf(BPF_PROG_TEST_RUN, &a);
}

/* --probe: does this kernel run live XDP frames? One run of "return XDP_DROP" on lo. */
static int probe(void)
{
	mov_imm(0, XDP_DROP);
	exit_insn();
	int fd = load_program();
	static const unsigned char frame[60] = {0};
	unsigned lo = if_nametoindex("lo");
	if (!lo) {
		fprintf(stderr, "%s: no loopback device to probe on\n", PROG);
		return 1;
	}
	if (test_run(fd, frame, sizeof(frame), lo, 1, 1) < 0) {
		fprintf(stderr, "%s: this kernel does not run live XDP frames (BPF_F_TEST_XDP_LIVE_FRAMES, "
			"Linux >= 5.18): %s\n", PROG, strerror(errno));
		return 1;
	}
	printf("ok\n");
	return 0;
}

/* -- the run ---------------------------------------------------------------------------- */

struct waiter {
	pthread_t sender;
	int params_fd;
	uint64_t total;
	volatile int done;
};

/* Interrupts the sender's run once every frame is out (or on SIGTERM): the kernel loop
 * only ends on a signal. Looks every millisecond near the end, rarely before. */
static void *watch(void *arg)
{
	struct waiter *w = arg;
	uint32_t key = 0;
	unsigned char params[P_SIZE];
	while (!w->done) {
		uint64_t k = 0, t0 = 0, ps = 0;
		if (map_lookup(w->params_fd, &key, params) == 0) {
			memcpy(&t0, params + P_T0, 8);
			memcpy(&ps, params + P_PS, 8);
			memcpy(&k, params + P_K, 8);
		}
		if (k >= w->total || stop_flag) {
			pthread_kill(w->sender, SIGUSR1);
			struct timespec ts = {0, 200000};
			nanosleep(&ts, NULL);
			continue;
		}
		uint64_t wait_ns = 1000000;
		if (t0 && ps) { /* paced: sleep until 2 ms before the schedule ends, at most 50 ms */
			uint64_t end = t0 + (uint64_t)((double)w->total * (double)ps / 1000.0), now = now_ns();
			if (end > now + 3000000) wait_ns = end - now - 2000000;
			if (wait_ns > 50000000) wait_ns = 50000000;
		}
		struct timespec ts = {(time_t)(wait_ns / 1000000000ULL), (long)(wait_ns % 1000000000ULL)};
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static void usage(void)
{
	fprintf(stderr, "usage: vsbench-xdpgen -c config -n frames_per_stream [-r aggregate_fps] [-C cpu] "
			"[-K catchup_share] [-b batch] [-N nice] [-B bins_file] [-w] | --probe\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *config = NULL, *bins_path = NULL;
	double rate = 0, catchup = 0;
	unsigned long long per_stream = 0;
	int cpu = -1, batch = 16, wait_go = 0, niceness = 0, probe_only = 0;
	static const struct option longopts[] = {{"probe", no_argument, NULL, 'p'}, {"help", no_argument, NULL, 'h'},
						 {0}};
	int opt;
	while ((opt = getopt_long(argc, argv, "c:n:r:C:b:B:N:K:wh", longopts, NULL)) != -1) {
		switch (opt) {
		case 'c': config = optarg; break;
		case 'n': per_stream = strtoull(optarg, NULL, 10); break;
		case 'r': rate = strtod(optarg, NULL); break;
		case 'C': cpu = atoi(optarg); break;
		case 'b': batch = atoi(optarg); break;
		case 'B': bins_path = optarg; break;
		case 'N': niceness = atoi(optarg); break;
		case 'K': catchup = strtod(optarg, NULL); break;
		case 'w': wait_go = 1; break;
		case 'p': probe_only = 1; break;
		default: usage();
		}
	}
	if (probe_only) return probe();
	if (!config || !per_stream || batch < 1 || batch > 256 || rate < 0 || catchup < 0) usage();
	static struct stream_spec streams[MAX_STREAMS];
	unsigned nstreams = read_streams(PROG, config, streams);
	for (unsigned i = 1; i < nstreams; i++)
		if (streams[i].len != streams[0].len) fail("every stream must send frames of one length");
	for (unsigned i = 0; i < nstreams; i++)
		if (streams[i].nsizes) fail("a frame mix (sizes) is sent by the pacer, not the xdp sender");
	if (streams[0].len > 3000) fail("frames longer than 3000 bytes do not fit a live XDP frame's page");
	unsigned ifindex[MAX_STREAMS];
	for (unsigned i = 0; i < nstreams; i++) {
		ifindex[i] = if_nametoindex(streams[i].ifname);
		if (!ifindex[i]) die(streams[i].ifname);
	}

	if (cpu >= 0) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set) < 0) die("sched_setaffinity");
	}
	if (niceness && setpriority(PRIO_PROCESS, 0, niceness) < 0) die("setpriority");

	uint64_t total = per_stream * nstreams;
	double nominal_s = rate > 0 ? (double)total / rate : 0;
	uint32_t nbins = (uint32_t)((rate > 0 ? 2 * nominal_s + 2 : 60) * 1e9 / BIN_NS) + 1;
	int params_fd = map_create(BPF_MAP_TYPE_ARRAY, 4, P_SIZE, 1);
	int bins_fd = map_create(BPF_MAP_TYPE_ARRAY, 4, 4, nbins);
	int devmap_fd = map_create(BPF_MAP_TYPE_DEVMAP, 4, 4, MAX_STREAMS);
	for (uint32_t i = 0; i < nstreams; i++) map_update(devmap_fd, &i, &ifindex[i]);
	unsigned char params[P_SIZE];
	memset(params, 0, sizeof(params));
	uint64_t ps = rate > 0 ? (uint64_t)(1e12 / rate + 0.5) : 0;
	uint64_t gap = rate > 0 && catchup > 0 ? (uint64_t)(1e12 / (rate * (1.0 + catchup))) : 0;
	/* the catch-up's burst tolerance: a batch, or 100 us of frames if that is more */
	double burst = rate * 100e-6 > batch ? rate * 100e-6 : batch;
	uint64_t tau = (uint64_t)(burst * (double)gap);
	memcpy(params + P_PS, &ps, 8);
	memcpy(params + P_TOTAL, &total, 8);
	memcpy(params + P_GAP, &gap, 8);
	memcpy(params + P_TAU, &tau, 8);
	uint32_t zero = 0;
	map_update(params_fd, &zero, params);
	build_program(streams, nstreams, params_fd, bins_fd, devmap_fd, nbins);
	int prog_fd = load_program();

	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = on_wake; /* no SA_RESTART: the run returns EINTR */
	sigaction(SIGUSR1, &sa, NULL);

	if (wait_go) {
		printf("ready\n");
		fflush(stdout);
		char buf[16];
		if (!fgets(buf, sizeof(buf), stdin)) return 1;
	}
	printf("running\n");
	fflush(stdout);

	struct waiter w = {.sender = pthread_self(), .params_fd = params_fd, .total = total};
	pthread_t watcher;
	if (pthread_create(&watcher, NULL, watch, &w)) fail("cannot start the watcher thread");
	if (cpu >= 0) { /* the watcher wakes rarely; keep it off the sender's CPU when there is another */
		cpu_set_t set;
		CPU_ZERO(&set);
		sched_getaffinity(0, sizeof(set), &set);
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		CPU_ZERO(&set);
		for (long c = 0; c < n; c++)
			if (c != cpu) CPU_SET(c, &set);
		if (CPU_COUNT(&set)) pthread_setaffinity_np(watcher, sizeof(set), &set);
	}
	uint64_t started = now_ns(), k = 0;
	unsigned runs = 0;
	while (!stop_flag) {
		runs++;
		int r = test_run(prog_fd, streams[0].frame, streams[0].len, ifindex[0], 0xffffffffu, (uint32_t)batch);
		if (r < 0 && errno != EINTR) {
			w.done = 1;
			pthread_join(watcher, NULL);
			fprintf(stderr, "%s: the live XDP run failed: %s\n", PROG, strerror(errno));
			return 1;
		}
		if (map_lookup(params_fd, &zero, params) == 0) memcpy(&k, params + P_K, 8);
		if (k >= total) break;
	}
	uint64_t t_end = now_ns();
	w.done = 1;
	pthread_join(watcher, NULL);
	map_lookup(params_fd, &zero, params);

	struct run_facts facts;
	memset(&facts, 0, sizeof(facts));
	memcpy(&facts.t0, params + P_T0, 8);
	memcpy(&facts.sent, params + P_K, 8);
	memcpy(&facts.t_first, params + P_FIRST, 8);
	memcpy(&facts.t_last, params + P_LAST, 8);
	memcpy(&facts.late_max_ns, params + P_LATE, 8);
	memcpy(&facts.late_frames, params + P_LATE_FRAMES, 8);
	if (!facts.t0) facts.t0 = started;
	facts.asked = total;
	facts.t_end = t_end;
	facts.rate = rate;
	facts.loops = runs;
	facts.stopped = stop_flag && facts.sent < total;
	facts.catchup = catchup;
	uint32_t *bins = calloc(nbins, sizeof(uint32_t));
	if (!bins) die("calloc bins");
	uint32_t used = facts.t_last > facts.t0 ? (uint32_t)((facts.t_last - facts.t0) / BIN_NS) + 1 : 1;
	if (used > nbins) used = nbins;
	for (uint32_t i = 0; i < used; i++) map_lookup(bins_fd, &i, &bins[i]);
	if (bins_path) {
		FILE *bf = fopen(bins_path, "wb");
		if (bf) {
			fwrite(bins, sizeof(uint32_t), used, bf);
			fclose(bf);
		}
	}
	const char *names[MAX_STREAMS];
	uint64_t per[MAX_STREAMS];
	for (unsigned i = 0; i < nstreams; i++) {
		names[i] = streams[i].ifname;
		per[i] = facts.sent / nstreams + (i < facts.sent % nstreams ? 1 : 0);
	}
	print_summary(&facts, bins, nbins, names, per, nstreams);
	return facts.sent < total ? 3 : 0;
}
