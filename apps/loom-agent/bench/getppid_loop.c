/* The probe-cost loop: N calls of syscall(SYS_getppid), printing the mean
 * ns per call. Named by argv[1] (its /proc/PID/comm) so the agent can
 * target it or not. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long n = argc > 2 ? atol(argv[2]) : 20000000L;
	struct timespec a, b;

	if (argc > 1)
		prctl(PR_SET_NAME, argv[1], 0, 0, 0);
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < n; i++)
		syscall(SYS_getppid);
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("%.1f\n", ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n);
	return 0;
}
