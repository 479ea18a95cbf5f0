/*
 * vsbench-pacer: the embedded generator's bulk sender (vsbench trafficgen "trafgen",
 * engine "pacer"). One process, one CPU, up to two streams (one per generator port).
 *
 * Why it exists: pacing netsniff-ng trafgen with a tbf shaper costs a qdisc round trip
 * and a timer interrupt per few frames, which on a 2-core VM halves what one core can
 * send, and the shaper's bucket makes the offered load in any short window differ from
 * the nominal one. This sender paces itself: frame j of the trial (all streams, in turn)
 * is due at t0 + j / rate; each loop iteration reads CLOCK_MONOTONIC and hands the kernel
 * every frame that is due (at most --batch), through a packet socket with
 * PACKET_QDISC_BYPASS (no qdisc, the driver's xmit directly) and either a TX_RING
 * (--tx ring) or sendmmsg() (--tx mmsg). It counts what it handed over in 100-us bins,
 * so the trial result can say how exact the pacing was: the largest deviation from the
 * nominal count of the trial's consecutive 10 ms windows (and of any 10 ms window, sliding
 * by 100 us) and the most frames in any 1 ms.
 *
 * Catch-up is bounded (-K share): after a stall the sender hands over what fell due at no
 * more than (1 + share) x the nominal rate, plus a bucket of max(batch, 100 us of traffic),
 * so no 1 ms carries more than about (1 + share) x its nominal frames however long the
 * stall; a stall longer than the catch-up can make good within its window leaves that
 * window short, and the trial says so (the pacing figures) instead of hiding it in a burst.
 *
 * Flows: each stream's frame k carries, in every varying field, base + ((k / run) mod period)
 * (the same lock-step counters as the trafgen configuration, see flows.py); the IPv4
 * header checksum is recomputed and the UDP checksum updated incrementally (RFC 1624).
 *
 * Protocol: the configuration file (-c) has one "stream" block per port:
 *     stream <ifname>
 *     frame <hex bytes of the frame without FCS>
 *     ip <offset of the IPv4 header>
 *     field <offset> <width 2|4> <base> <period>      (zero or more)
 *     run <frames>                                     (optional: burst pattern)
 * Options: -r <aggregate frames/s, 0 = as fast as possible> -n <frames per stream>
 * [-C cpu] [-b batch] [-t ring|mmsg] [--qdisc] [-R ring slots] [-B bins file] [-P fifo priority]
 * [-Y period_us,sleep_us] [-K catch-up share] [-w] [-D pcap]
 * -D writes the frames it would send (frames 0..n-1 of each stream, in the order it sends
 * them) to a pcap file instead, and sends nothing: what the unit tests check the flow
 * pattern and checksums on, without a network.
 * With -w it prints "ready" once its sockets are set up and waits for a line on stdin
 * before it starts; it always prints "running" when it starts and, at the end, one JSON
 * object (the summary) on stdout. SIGTERM/SIGINT stop it early (the summary says so).
 * Exit 0 when every frame was handed over, 3 when stopped early, 1 on an error.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "vsbench_streams.h"

#ifndef PACKET_QDISC_BYPASS
#define PACKET_QDISC_BYPASS 20
#endif

#define MAX_BATCH 256

struct stream {
	struct stream_spec spec; /* what it sends (vsbench_streams.h) */
	int fd;
	/* TX ring */
	unsigned char *ring;
	unsigned slots, slot_size, head;
	/* sendmmsg */
	unsigned char *bufs;
	uint64_t k;      /* frames built so far */
	uint64_t sent;   /* frames the kernel accepted */
	uint64_t errors; /* frames it refused */
};

static struct stream streams[MAX_STREAMS];
static unsigned nstreams;
static volatile sig_atomic_t stop_flag;
static uint64_t ring_waits; /* times the TX ring was full */

static void on_signal(int sig) { (void)sig; stop_flag = 1; }

static void die(const char *what)
{
	fprintf(stderr, "vsbench-pacer: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void fail(const char *msg)
{
	fprintf(stderr, "vsbench-pacer: %s\n", msg);
	exit(1);
}

static inline uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* ones' complement helpers */
static inline uint32_t csum_add16(uint32_t sum, const unsigned char *p, unsigned n)
{
	for (unsigned i = 0; i + 1 < n; i += 2) sum += (uint32_t)(p[i] << 8 | p[i + 1]);
	return sum;
}

static inline uint16_t csum_fold(uint32_t sum)
{
	while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

/* A frame mix: cut buf (a template copy with its counters applied) to len bytes, set the
 * IPv4 total length and checksum and the UDP length, and compute the UDP checksum anew
 * (pseudo header, header, payload) unless the template has none. */
static inline void set_length(struct stream *s, unsigned char *buf, unsigned len)
{
	unsigned ip = s->spec.ip_off, udp = ip + 20;
	unsigned ip_len = len - ip, udp_len = ip_len - 20;
	buf[ip + 2] = (unsigned char)(ip_len >> 8); buf[ip + 3] = (unsigned char)ip_len;
	buf[ip + 10] = buf[ip + 11] = 0;
	uint16_t c = (uint16_t)~csum_fold(csum_add16(0, buf + ip, 20));
	buf[ip + 10] = (unsigned char)(c >> 8); buf[ip + 11] = (unsigned char)c;
	buf[udp + 4] = (unsigned char)(udp_len >> 8); buf[udp + 5] = (unsigned char)udp_len;
	if (!s->spec.udp_csum0) return;
	buf[udp + 6] = buf[udp + 7] = 0;
	uint32_t sum = csum_add16(0, buf + ip + 12, 8); /* pseudo header: addresses */
	sum += 17 + udp_len;                            /* protocol, UDP length */
	sum = csum_add16(sum, buf + udp, udp_len);
	if (udp_len & 1) sum += (uint32_t)buf[udp + udp_len - 1] << 8;
	c = (uint16_t)~csum_fold(sum);
	if (c == 0) c = 0xffff;
	buf[udp + 6] = (unsigned char)(c >> 8); buf[udp + 7] = (unsigned char)c;
}

/* Write frame k of stream s into buf (a copy of the template with the counters applied);
 * returns its length (a frame mix: the cycle's k-th, else the template's). */
static inline unsigned build(struct stream *s, unsigned char *buf, uint64_t k)
{
	unsigned len = s->spec.nsizes ? s->spec.sizes[k % s->spec.nsizes] : s->spec.len;
	memcpy(buf, s->spec.frame, len);
	if (!s->spec.nfields) {
		if (s->spec.nsizes) set_length(s, buf, len);
		return len;
	}
	k /= s->spec.run;
	uint32_t udp_delta = 0; /* sum(new) + sum(~old) over words covered by the UDP checksum */
	int udp_touched = 0, ip_touched = 0;
	for (unsigned j = 0; j < s->spec.nfields; j++) {
		struct field *fl = &s->spec.fields[j];
		uint64_t v = fl->base + (k % fl->period);
		unsigned char *p = buf + fl->offset;
		if (fl->in_udp_pseudo || fl->in_udp) {
			for (unsigned i = 0; i < fl->width; i += 2)
				udp_delta += (uint16_t)~(p[i] << 8 | p[i + 1]);
		}
		if (fl->width == 4) {
			p[0] = (unsigned char)(v >> 24); p[1] = (unsigned char)(v >> 16);
			p[2] = (unsigned char)(v >> 8); p[3] = (unsigned char)v;
		} else {
			p[0] = (unsigned char)(v >> 8); p[1] = (unsigned char)v;
		}
		if (fl->in_udp_pseudo || fl->in_udp) {
			udp_delta = csum_add16(udp_delta, p, fl->width);
			udp_touched = 1;
		}
		if (fl->in_ip) ip_touched = 1;
	}
	unsigned ip = s->spec.ip_off;
	if (ip_touched) {
		buf[ip + 10] = buf[ip + 11] = 0;
		uint16_t c = (uint16_t)~csum_fold(csum_add16(0, buf + ip, 20));
		buf[ip + 10] = (unsigned char)(c >> 8); buf[ip + 11] = (unsigned char)c;
	}
	if (s->spec.nsizes) { /* lengths and both checksums anew */
		set_length(s, buf, len);
		return len;
	}
	if (udp_touched && s->spec.udp_csum0) {
		/* RFC 1624: HC' = ~(~HC + ~m + m') */
		uint32_t sum = (uint16_t)~s->spec.udp_csum0;
		sum += udp_delta;
		uint16_t c = (uint16_t)~csum_fold(sum);
		if (c == 0) c = 0xffff;
		unsigned udp = ip + 20;
		buf[udp + 6] = (unsigned char)(c >> 8); buf[udp + 7] = (unsigned char)c;
	}
	return len;
}

static int open_socket(struct stream *s, int use_ring, unsigned ring_slots, int bypass, int batch)
{
	int fd = socket(AF_PACKET, SOCK_RAW, 0); /* protocol 0: sends only, receives nothing */
	if (fd < 0) die("socket(AF_PACKET)");
	int one = 1;
	if (bypass && setsockopt(fd, SOL_PACKET, PACKET_QDISC_BYPASS, &one, sizeof(one)) < 0)
		die("PACKET_QDISC_BYPASS");
	unsigned ifindex = if_nametoindex(s->spec.ifname);
	if (!ifindex) die(s->spec.ifname);
	if (use_ring) {
		int v = TPACKET_V2;
		if (setsockopt(fd, SOL_PACKET, PACKET_VERSION, &v, sizeof(v)) < 0) die("PACKET_VERSION");
		unsigned need = TPACKET2_HDRLEN - sizeof(struct sockaddr_ll) + s->spec.len;
		unsigned size = 64;
		while (size < need) size <<= 1;
		struct tpacket_req req = {0};
		req.tp_frame_size = size;
		req.tp_block_size = size < 4096 ? 4096 : size;
		unsigned per_block = req.tp_block_size / size;
		req.tp_block_nr = (ring_slots + per_block - 1) / per_block;
		req.tp_frame_nr = req.tp_block_nr * per_block;
		if (setsockopt(fd, SOL_PACKET, PACKET_TX_RING, &req, sizeof(req)) < 0) die("PACKET_TX_RING");
		s->slots = req.tp_frame_nr;
		s->slot_size = size;
		s->ring = mmap(NULL, (size_t)req.tp_block_size * req.tp_block_nr, PROT_READ | PROT_WRITE,
			       MAP_SHARED | MAP_LOCKED | MAP_POPULATE, fd, 0);
		if (s->ring == MAP_FAILED) {
			s->ring = mmap(NULL, (size_t)req.tp_block_size * req.tp_block_nr, PROT_READ | PROT_WRITE,
				       MAP_SHARED, fd, 0);
			if (s->ring == MAP_FAILED) die("mmap TX ring");
		}
	} else {
		s->bufs = aligned_alloc(64, (size_t)batch * ((s->spec.len + 63) & ~63u));
		if (!s->bufs) die("malloc");
	}
	struct sockaddr_ll ll = {0};
	ll.sll_family = AF_PACKET;
	ll.sll_protocol = 0;
	ll.sll_ifindex = (int)ifindex;
	if (bind(fd, (struct sockaddr *)&ll, sizeof(ll)) < 0) die("bind");
	s->fd = fd;
	return fd;
}

/* Hand n frames of stream s to the kernel; returns how many it accepted. */
static unsigned send_ring(struct stream *s, unsigned n)
{
	unsigned queued = 0;
	for (; queued < n; queued++) {
		struct tpacket2_hdr *h = (void *)(s->ring + (size_t)s->head * s->slot_size);
		unsigned waits = 0;
		while (h->tp_status != TP_STATUS_AVAILABLE) {
			if (h->tp_status == TP_STATUS_WRONG_FORMAT) fail("kernel rejected a frame (wrong format)");
			if (queued) break;  /* send what we have; the slot frees meanwhile */
			/* The ring is full: frames wait in the receiving side's backlog, and under
			 * SCHED_FIFO the kernel thread that would process them (ksoftirqd) only runs
			 * when this sender sleeps -- spinning here stalled it for 50 ms at a time,
			 * until the kernel's fair server stepped in (measured). */
			struct timespec ts = {.tv_sec = 0, .tv_nsec = 10000};
			clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
			ring_waits++;
			if (++waits > 100000 || stop_flag) return 0;
		}
		if (h->tp_status != TP_STATUS_AVAILABLE) break;
		unsigned char *data = (unsigned char *)h + TPACKET2_HDRLEN - sizeof(struct sockaddr_ll);
		h->tp_len = build(s, data, s->k++);
		h->tp_status = TP_STATUS_SEND_REQUEST;
		s->head = (s->head + 1) % s->slots;
	}
	if (!queued) return 0;
	for (;;) {
		ssize_t r = send(s->fd, NULL, 0, MSG_DONTWAIT);
		if (r >= 0) break;
		if (errno == EAGAIN || errno == ENOBUFS || errno == EINTR) {
			if (stop_flag) break;
			continue;
		}
		die("send (TX ring)");
	}
	s->sent += queued;
	return queued;
}

static unsigned send_mmsg(struct stream *s, unsigned n)
{
	static struct mmsghdr msgs[MAX_BATCH];
	static struct iovec iov[MAX_BATCH];
	unsigned stride = (s->spec.len + 63) & ~63u;
	for (unsigned i = 0; i < n; i++) {
		unsigned char *buf = s->bufs + (size_t)i * stride;
		iov[i].iov_len = build(s, buf, s->k + i);
		iov[i].iov_base = buf;
		memset(&msgs[i].msg_hdr, 0, sizeof(msgs[i].msg_hdr));
		msgs[i].msg_hdr.msg_iov = &iov[i];
		msgs[i].msg_hdr.msg_iovlen = 1;
	}
	unsigned done = 0;
	while (done < n) {
		int r = sendmmsg(s->fd, msgs + done, n - done, 0);
		if (r < 0) {
			if (errno == EINTR && !stop_flag) continue;
			if (errno == ENOBUFS || errno == EAGAIN) {
				if (stop_flag) break;
				continue;
			}
			die("sendmmsg");
		}
		done += (unsigned)r;
	}
	s->k += done;
	s->sent += done;
	return done;
}


/* What the send loop keeps: frames handed over, where the next goes, the 100-us bins. */
struct sender {
	uint64_t t0, sent, t_first, t_last;
	unsigned next_stream;
	uint32_t *bins;
	size_t nbins;
	int use_ring;
};

/* Hand over n frames, frame j of the trial to stream j mod nstreams; count them in the bin
 * of the moment the kernel had them. Returns how many it accepted. */
static unsigned send_frames(struct sender *sd, unsigned n)
{
	unsigned counts[MAX_STREAMS] = {0};
	for (unsigned i = 0; i < n; i++) counts[(sd->next_stream + i) % nstreams]++;
	unsigned done = 0;
	for (unsigned i = 0; i < nstreams; i++) {
		unsigned si = (sd->next_stream + i) % nstreams;
		if (!counts[si]) continue;
		unsigned got = sd->use_ring ? send_ring(&streams[si], counts[si]) : send_mmsg(&streams[si], counts[si]);
		done += got;
		if (got < counts[si]) break;
	}
	if (!done) return 0;
	sd->next_stream = (unsigned)((sd->next_stream + done) % nstreams);
	sd->sent += done;
	uint64_t t = now_ns();
	if (!sd->t_first) sd->t_first = t;
	sd->t_last = t;
	size_t b = (size_t)((t - sd->t0) / BIN_NS);
	if (b >= sd->nbins) b = sd->nbins - 1;
	sd->bins[b] += done;
	return done;
}

/* -D: frames 0..per_stream-1 of every stream, in turn as they would be sent, into a pcap
 * file (microsecond format, Ethernet); no socket is opened. */
static int dump_frames(const char *path, unsigned long long per_stream)
{
	FILE *f = fopen(path, "wb");
	if (!f) die("fopen dump");
	const uint32_t head[6] = {0xa1b2c3d4U, 2 | 4U << 16, 0, 0, MAX_FRAME, 1};
	fwrite(head, sizeof(head), 1, f);
	static unsigned char buf[MAX_FRAME];
	for (unsigned long long k = 0; k < per_stream; k++) {
		for (unsigned i = 0; i < nstreams; i++) {
			unsigned len = build(&streams[i], buf, k);
			uint32_t rec[4] = {0, 0, len, len};
			fwrite(rec, sizeof(rec), 1, f);
			fwrite(buf, len, 1, f);
		}
	}
	if (fclose(f) != 0) die("fclose dump");
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: vsbench-pacer -c config -n frames_per_stream [-r aggregate_fps] [-C cpu] "
			"[-b batch] [-t ring|mmsg] [--qdisc] [-R ring_slots] [-B bins_file] [-P fifo_priority] "
			"[-Y period_us,sleep_us] [-K catchup_share] [-w] [-D dump.pcap]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *config = NULL, *bins_path = NULL, *dump_path = NULL;
	double rate = 0, catchup = 0; /* -K: catch-up at most (1 + catchup) x rate; 0: unbounded */
	unsigned long long per_stream = 0;
	int cpu = -1, batch = 32, use_ring = 1, bypass = 1, wait_go = 0, fifo = 0, niceness = 0;
	unsigned yield_period_us = 0, yield_us = 0; /* -Y period,length in us */
	unsigned ring_slots = 1024;
	static const struct option longopts[] = {
		{"qdisc", no_argument, NULL, 'q'}, {"help", no_argument, NULL, 'h'}, {0}};
	int opt;
	while ((opt = getopt_long(argc, argv, "c:n:r:C:b:t:R:B:P:Y:N:K:D:wqh", longopts, NULL)) != -1) {
		switch (opt) {
		case 'c': config = optarg; break;
		case 'n': per_stream = strtoull(optarg, NULL, 10); break;
		case 'r': rate = strtod(optarg, NULL); break;
		case 'C': cpu = atoi(optarg); break;
		case 'b': batch = atoi(optarg); break;
		case 't': use_ring = strcmp(optarg, "mmsg") != 0; break;
		case 'R': ring_slots = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'B': bins_path = optarg; break;
		case 'w': wait_go = 1; break;
		case 'P': fifo = atoi(optarg); break;
		case 'N': niceness = atoi(optarg); break;
		case 'Y':
			if (sscanf(optarg, "%u,%u", &yield_period_us, &yield_us) != 2) usage();
			break;
		case 'K': catchup = strtod(optarg, NULL); break;
		case 'q': bypass = 0; break;
		case 'D': dump_path = optarg; break;
		default: usage();
		}
	}
	if (!config || !per_stream || batch < 1 || batch > MAX_BATCH || rate < 0 || ring_slots < 16 || catchup < 0)
		usage();
	{
		static struct stream_spec specs[MAX_STREAMS];
		nstreams = read_streams("vsbench-pacer", config, specs);
		for (unsigned i = 0; i < nstreams; i++) streams[i].spec = specs[i];
	}
	if (dump_path) return dump_frames(dump_path, per_stream);

	if (cpu >= 0) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set) < 0) die("sched_setaffinity");
	}
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	if (fifo > 0) {
		/* A normal task on a shared CPU is descheduled for milliseconds, and the load
		 * offered in that window is off by as much; SCHED_FIFO at a low priority yields
		 * only to interrupts and the kernel's own real-time threads. */
		struct sched_param sp = {.sched_priority = fifo};
		if (sched_setscheduler(0, SCHED_FIFO, &sp) < 0) die("sched_setscheduler(SCHED_FIFO)");
	}
	if (niceness && setpriority(PRIO_PROCESS, 0, niceness) < 0) die("setpriority");
	mlockall(MCL_CURRENT | MCL_FUTURE);
	struct sigaction sa = {0};
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	for (unsigned i = 0; i < nstreams; i++) open_socket(&streams[i], use_ring, ring_slots, bypass, batch);

	uint64_t total = per_stream * nstreams;
	double ns_per_frame = rate > 0 ? 1e9 / rate : 0;
	/* bins: generous length (paced: 2x nominal + 2 s); unpaced: 60 s */
	double nominal_s = rate > 0 ? (double)total / rate : 0;
	size_t nbins = (size_t)((rate > 0 ? 2 * nominal_s + 2 : 60) * 1e9 / BIN_NS) + 1;
	uint32_t *bins = calloc(nbins, sizeof(uint32_t));
	if (!bins) die("calloc bins");

	if (wait_go) {
		printf("ready\n");
		fflush(stdout);
		char buf[16];
		if (!fgets(buf, sizeof(buf), stdin)) return 1;
	}
	printf("running\n");
	fflush(stdout);

	uint64_t t0 = now_ns() + 20000; /* first frame 20 us from now */
	while (now_ns() < t0) ;
	struct sender sd = {.t0 = t0, .bins = bins, .nbins = nbins, .use_ring = use_ring};
	uint64_t loops = 0, max_gap = 0, late_max = 0, prev = t0;
	/* -Y: under SCHED_FIFO, sleep yield_us every yield_period_us. The kernel allows
	 * real-time tasks 95 % of each second (sched_rt_runtime_us): a sender that never sleeps
	 * is stopped for 50 ms at 950 ms into its trial (measured, every trial). Yielding 6 %
	 * in 30 us steps keeps it under that and lets a task it would starve run. Before it
	 * sleeps the sender hands over what falls due in a sleep of the asked length (what
	 * falls due while the kernel oversleeps it is late, and counted), and it never sleeps
	 * across the border of a 10 ms window, so each window still gets its exact count. */
	uint64_t yield_every = fifo > 0 && yield_us && yield_period_us ? (uint64_t)yield_period_us * 1000ULL : 0;
	uint64_t next_yield = t0 + yield_every, yields = 0, yield_checks = 0;
	uint64_t sleep_est = (uint64_t)yield_us * 1000ULL + 30000ULL; /* what a sleep really takes */
	const uint64_t presend_max = sleep_est;
	/* -K: a token bucket filled at (1 + catchup) x rate, max(batch, 100 us of frames) deep,
	 * gates every hand-over: on schedule it never binds, after a stall it paces the catch-up. */
	double tok_per_ns = rate > 0 && catchup > 0 ? rate * (1.0 + catchup) / 1e9 : 0;
	double tok_depth = rate * 100e-6 > batch ? rate * 100e-6 : batch;
	double tokens = tok_depth;
	uint64_t tok_t = t0, gated = 0;

	uint64_t late_frames = 0;
	while (sd.sent < total && !stop_flag) {
		int late_now = 0;
		uint64_t now = now_ns();
		loops++;
		if (yield_every && now >= next_yield) {
			uint64_t into = (now - t0) % WINDOW_NS;
			next_yield = now + yield_every;
			yield_checks++;
			if (WINDOW_NS - into > 2 * sleep_est + 20000) {
				if (rate > 0) {
					/* hand over what falls due in a sleep of the asked length; what falls
					 * due while a sleep overruns that is late, and counted as late (an
					 * estimate that learnt of one long sleep would send milliseconds of
					 * frames early, a burst no lateness figure shows) */
					uint64_t horizon = sleep_est < presend_max ? sleep_est : presend_max;
					uint64_t ahead = (uint64_t)((double)(now + horizon - t0) / ns_per_frame) + 1;
					if (ahead > total) ahead = total;
					while (sd.sent < ahead && !stop_flag) {
						uint64_t n = ahead - sd.sent;
						unsigned got = send_frames(&sd, (unsigned)(n > (uint64_t)batch ? (uint64_t)batch : n));
						tokens -= got;
						if (got == 0) break;
					}
				}
				struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)yield_us * 1000L};
				uint64_t a = now_ns();
				clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
				uint64_t slept = now_ns() - a;
				sleep_est = (3 * sleep_est + slept) / 4;
				if (sleep_est < (uint64_t)yield_us * 1000ULL) sleep_est = (uint64_t)yield_us * 1000ULL;
				yields++;
				now = now_ns();
				prev = now;
			}
		}
		if (now - prev > max_gap) max_gap = now - prev;
		prev = now;
		uint64_t due;
		if (rate > 0) {
			due = (uint64_t)((double)(now - t0) / ns_per_frame) + 1;
			if (due > total) due = total;
			if (due <= sd.sent) {
				/* Nothing due: sleep when the next frame is more than 1 ms away, else spin
				 * (a sleeping vCPU may halt, and waking it can take far longer). */
				uint64_t next_at = t0 + (uint64_t)((double)sd.sent * ns_per_frame);
				if (next_at > now + 1000000) {
					struct timespec ts;
					uint64_t wake = next_at - 200000;
					ts.tv_sec = (time_t)(wake / 1000000000ULL);
					ts.tv_nsec = (long)(wake % 1000000000ULL);
					clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
					prev = now_ns();
				}
				continue;
			}
			uint64_t behind = now - (t0 + (uint64_t)((double)sd.sent * ns_per_frame));
			if (behind > late_max) late_max = behind;
			late_now = behind > LATE_FRAME_NS;
		} else {
			due = total;
		}
		uint64_t n = due - sd.sent;
		if (tok_per_ns > 0) {
			tokens += (double)(now - tok_t) * tok_per_ns;
			tok_t = now;
			if (tokens > tok_depth) tokens = tok_depth;
			if (tokens < 1.0) { gated++; continue; }
			if ((double)n > tokens) { n = (uint64_t)tokens; gated++; }
		}
		unsigned got = send_frames(&sd, (unsigned)(n > (uint64_t)batch ? (uint64_t)batch : n));
		tokens -= got;
		if (late_now) late_frames += got;
	}
	uint64_t sent = sd.sent, t_first = sd.t_first, t_last = sd.t_last ? sd.t_last : t0;
	uint64_t t_end = now_ns();

	size_t used = (size_t)((t_last - t0) / BIN_NS) + 1;
	if (used > nbins) used = nbins;
	if (bins_path) {
		FILE *bf = fopen(bins_path, "wb");
		if (bf) { fwrite(bins, sizeof(uint32_t), used, bf); fclose(bf); }
	}
	struct run_facts facts = {
		.t0 = t0, .sent = sent, .asked = total, .t_first = t_first, .t_last = t_last, .t_end = t_end,
		.rate = rate, .late_max_ns = late_max, .max_gap_ns = max_gap, .loops = loops, .stopped = stop_flag,
		.catchup = catchup, .gated = gated, .yields = yields, .yield_checks = yield_checks,
		.ring_waits = ring_waits, .late_frames = late_frames};
	const char *names[MAX_STREAMS];
	uint64_t per[MAX_STREAMS];
	for (unsigned i = 0; i < nstreams; i++) {
		names[i] = streams[i].spec.ifname;
		per[i] = streams[i].sent;
	}
	print_summary(&facts, bins, nbins, names, per, nstreams);
	return sent < total ? 3 : 0;
}
