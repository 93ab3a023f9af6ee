/* proc_self.h - what /proc says of this process, read with one open and one read. */
#ifndef GMT_CORE_PROC_SELF_H
#define GMT_CORE_PROC_SELF_H

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Field `field` (3 on: the state, the parent's pid, ...) of a /proc/.../stat line in buf, or
 * NULL when the line has fewer. The name (field 2) is in parentheses and may hold spaces and
 * ')': fields 3 on follow the last ')'. */
static inline const char *gmt_proc_stat_field(const char *buf, int field)
{
    const char *p = strrchr(buf, ')');
    for (int f = 2; p && f < field; f++)
        p = strchr(p + 1, ' ');
    return p && p[1] ? p + 1 : NULL;
}

/* The process's threads (/proc/self/stat's 20th field), or -1 when it cannot be read. */
static inline long gmt_process_threads(void)
{
    char buf[1024];
    int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return -1;
    buf[n] = '\0';
    const char *p = gmt_proc_stat_field(buf, 20);
    if (!p) return -1;
    char *end;
    long t = strtol(p, &end, 10);
    return end != p && t > 0 ? t : -1;
}

#endif
