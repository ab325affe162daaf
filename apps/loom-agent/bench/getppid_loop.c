/* The probe-cost loop: N calls of syscall(SYS_getppid), printing the mean
 * ns per call of the thread's CPU time and of wall-clock time. CPU time is
 * what the probes add to the caller (they run in its syscall context) and
 * does not count the time other processes on a busy machine take the CPU
 * away. Named by argv[1] (its /proc/PID/comm) so the agent can target it or
 * not. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double ns(struct timespec a, struct timespec b)
{
	return (b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec);
}

int main(int argc, char **argv)
{
	long n = argc > 2 ? atol(argv[2]) : 20000000L;
	struct timespec w0, w1, c0, c1;

	if (argc > 1)
		prctl(PR_SET_NAME, argv[1], 0, 0, 0);
	clock_gettime(CLOCK_MONOTONIC, &w0);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
	for (long i = 0; i < n; i++)
		syscall(SYS_getppid);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
	clock_gettime(CLOCK_MONOTONIC, &w1);
	printf("%.1f %.1f\n", ns(c0, c1) / n, ns(w0, w1) / n);
	return 0;
}
