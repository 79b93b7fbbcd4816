/* common/log.c — see log.h. */
#include "common/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int com_log_level = COM_LOG_WARN;

void com_log_set_level(int level) {
    com_log_level = level;
}

void com_log_init_from_env(void) {
    const char *v = getenv("EMBER_LOG");
    if (!v)
        return;
    static const char *names[] = {"debug", "info", "warn", "error"};
    for (int i = 0; i < 4; i++)
        if (strcmp(v, names[i]) == 0)
            com_log_level = i;
}

void com_log_write(int level, const char *file, int line, const char *fmt, ...) {
    static const char tags[] = "DIWE";
    char body[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(body, sizeof body, fmt, ap);
    va_end(ap);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    const char *base = strrchr(file, '/');
    fprintf(stderr, "%02d:%02d:%02d.%03ld %c %s:%d %s\n", tm.tm_hour, tm.tm_min, tm.tm_sec,
            ts.tv_nsec / 1000000, tags[level & 3], base ? base + 1 : file, line, body);
}
