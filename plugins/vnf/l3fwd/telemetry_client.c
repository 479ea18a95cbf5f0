/* vsb-telemetry SOCKET COMMAND: one query to a DPDK telemetry socket (v2), reply on stdout.
 * Built beside l3fwd (plugins/vnf/l3fwd/build.py) for the VM guest, which has no Python:
 * the host reads l3fwd's port counters in the guest with it over the serial console. */
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	static char buf[1 << 16];
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	ssize_t n;
	int fd;

	if (argc != 3 || strlen(argv[1]) >= sizeof(addr.sun_path)) {
		fprintf(stderr, "usage: vsb-telemetry SOCKET COMMAND\n");
		return 2;
	}
	strcpy(addr.sun_path, argv[1]);
	fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		perror("vsb-telemetry: connect");
		return 1;
	}
	if (recv(fd, buf, sizeof(buf) - 1, 0) < 0 /* the greeting */
	    || send(fd, argv[2], strlen(argv[2]), 0) < 0
	    || (n = recv(fd, buf, sizeof(buf) - 1, 0)) < 0) {
		perror("vsb-telemetry");
		return 1;
	}
	buf[n] = '\0';
	printf("%s\n", buf);
	close(fd);
	return 0;
}
