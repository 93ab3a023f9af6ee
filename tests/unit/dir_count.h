/* dir_count.h - for unit tests: how many entries of a folder have names starting with a
 * prefix (temporary files left behind, reports written). */
#ifndef GMT_TEST_DIR_COUNT_H
#define GMT_TEST_DIR_COUNT_H

#include <dirent.h>
#include <string.h>

/* Entries of folder d whose names begin with prefix; -1 when d cannot be read. */
static inline int gmt_test_count_prefixed(const char *d, const char *prefix)
{
    DIR *dp = opendir(d);
    if (!dp) return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(dp));)
        n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
    closedir(dp);
    return n;
}

#endif
