/* proc_self.h - what /proc says of this process, read with one open and one read. */
#ifndef GMT_CORE_PROC_SELF_H
#define GMT_CORE_PROC_SELF_H

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
    /* The name (field 2) is in parentheses and may hold spaces and ')': fields 3 on follow the
     * last ')'. num_threads is field 20, the 18th after it. */
    char *p = strrchr(buf, ')');
    for (int field = 2; p && field < 20; field++)
        p = strchr(p + 1, ' ');
    if (!p) return -1;
    char *end;
    long t = strtol(p + 1, &end, 10);
    return end != p + 1 && t > 0 ? t : -1;
}

#endif
