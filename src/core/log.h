/* log.h - the tracer's one way to speak: a line on stderr prefixed "gpumemtrace:".
 *
 * Formats into a stack buffer and write(2)s it, so it allocates nothing and can be used from
 * hooks and from the report writer. Nothing is logged per allocation at the default level.
 */
#ifndef GMT_CORE_LOG_H
#define GMT_CORE_LOG_H

typedef enum gmt_log_level_e {
    GMT_LOG_QUIET = 0,
    GMT_LOG_INFO = 1,
    GMT_LOG_DEBUG = 2,
} gmt_log_level_t;

/* Errors are printed even at "quiet": they are the "one clear line" the user must see. */
#define GMT_LOG_ERROR (-1)

void gmt_log_set_level(gmt_log_level_t level);
gmt_log_level_t gmt_log_get_level(void);
void gmt_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define gmt_error(...) gmt_log(GMT_LOG_ERROR, __VA_ARGS__)
#define gmt_info(...)  gmt_log(GMT_LOG_INFO, __VA_ARGS__)
#define gmt_debug(...) gmt_log(GMT_LOG_DEBUG, __VA_ARGS__)

#endif
