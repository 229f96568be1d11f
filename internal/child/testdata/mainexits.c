/* A process whose main thread ends (pthread_exit) while another thread
 * runs on: /proc shows the process as a zombie (Z), yet it runs. Once the
 * main thread has ended, the other thread writes "PID TID\n" to the file
 * named by argv[1] (written aside and renamed: whole when seen); then it
 * runs for at most 30 s, so that a test that fails leaves nothing behind
 * for long. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/syscall.h>

static const char *out;

static char state(void) {
	char buf[512];
	FILE *f = fopen("/proc/self/stat", "r");
	size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
	if (f)
		fclose(f);
	buf[n] = 0;
	char *p = strrchr(buf, ')');
	return p && p[1] && p[2] ? p[2] : '?';
}

static void *run(void *arg) {
	(void)arg;
	while (state() != 'Z')
		usleep(1000);
	char tmp[4096];
	snprintf(tmp, sizeof tmp, "%s.tmp", out);
	FILE *f = fopen(tmp, "w");
	if (!f)
		exit(1);
	fprintf(f, "%d %ld\n", (int)getpid(), (long)syscall(SYS_gettid));
	fclose(f);
	rename(tmp, out);
	for (int i = 0; i < 3000; i++)
		usleep(10000);
	exit(0);
}

int main(int argc, char **argv) {
	pthread_t t;
	if (argc != 2)
		return 2;
	out = argv[1];
	if (pthread_create(&t, NULL, run, NULL) != 0)
		return 1;
	pthread_exit(NULL);
}
