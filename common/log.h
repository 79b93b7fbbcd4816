/* common/log.h — leveled logging to stderr. COM_LOG checks the level before its arguments are
 * evaluated, so a disabled debug line costs one comparison. The level is process-wide and set
 * once at start (com_log_set_level, or EMBER_LOG=debug|info|warn|error); writes are one
 * fprintf each, so lines from different threads do not interleave. */
#ifndef EMBER_COMMON_LOG_H
#define EMBER_COMMON_LOG_H

enum { COM_LOG_DEBUG = 0, COM_LOG_INFO = 1, COM_LOG_WARN = 2, COM_LOG_ERROR = 3 };

extern int com_log_level;

void com_log_set_level(int level);
/* Reads EMBER_LOG from the environment; unknown values leave the level unchanged. */
void com_log_init_from_env(void);
void com_log_write(int level, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#define COM_LOG(level, ...)                                                                        \
    do {                                                                                           \
        if ((level) >= com_log_level)                                                              \
            com_log_write((level), __FILE__, __LINE__, __VA_ARGS__);                               \
    } while (0)
#define COM_DEBUG(...) COM_LOG(COM_LOG_DEBUG, __VA_ARGS__)
#define COM_INFO(...)  COM_LOG(COM_LOG_INFO, __VA_ARGS__)
#define COM_WARN(...)  COM_LOG(COM_LOG_WARN, __VA_ARGS__)
#define COM_ERROR(...) COM_LOG(COM_LOG_ERROR, __VA_ARGS__)

#endif
