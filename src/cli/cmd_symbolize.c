/* cmd_symbolize.c - `gpumemtrace symbolize [-o OUT] FILE`: names the native frames of a report
 * written without libdw (see symbolize/offline.h), in place or into OUT. */
#define _GNU_SOURCE
#include "cli/cli.h"
#include "symbolize/offline.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void gmt_cli_symbolize_help(FILE *to)
{
    fprintf(to, "Usage: gpumemtrace symbolize [-o OUT] FILE\n"
                "\n"
                "Fills function names, file:line and inlined frames into a report written\n"
                "without libdw (an out-of-memory or crash report, or a machine without libdw),\n"
                "from the module files named in it, where they are still there with the same\n"
                "build id. Rewrites FILE unless -o OUT is given. Every verb that reads a\n"
                "report does the same in memory.\n");
}

static int write_all(const char *path, const char *text)
{
    char tmp[4096];
    int n = snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
    if (n <= 0 || (size_t)n >= sizeof tmp) return -ENAMETOOLONG;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) return -errno;
    size_t len = strlen(text), done = 0;
    int rc = 0;
    while (done < len) {
        ssize_t w = write(fd, text + done, len - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            rc = -errno;
            break;
        }
        done += (size_t)w;
    }
    if (close(fd) != 0 && rc == 0) rc = -errno;
    if (rc == 0 && rename(tmp, path) != 0) rc = -errno;
    if (rc) unlink(tmp);
    return rc;
}

/* The whole file, parsed; only the schema name is checked (any version's frames are named). */
static int load(const char *path, cJSON **out)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f) return -errno;
    size_t cap = 1 << 20, len = 0;
    char *buf = malloc(cap);
    int rc = buf ? 0 : -ENOMEM;
    while (rc == 0) {
        if (len + 1 >= cap) {
            if (cap >= (size_t)1 << 30) {
                rc = -EFBIG;
                break;
            }
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                rc = -ENOMEM;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        size_t n = fread(buf + len, 1, cap - 1 - len, f);
        len += n;
        if (n == 0) {
            if (ferror(f)) rc = -EIO;
            break;
        }
    }
    if (f != stdin) fclose(f);
    if (rc == 0) {
        buf[len] = 0;
        *out = cJSON_ParseWithLength(buf, len);
        const cJSON *schema = cJSON_GetObjectItemCaseSensitive(*out, "schema");
        if (!cJSON_IsString(schema) || strcmp(schema->valuestring, GMT_REPORT_SCHEMA) != 0) {
            cJSON_Delete(*out);
            *out = NULL;
            rc = -EINVAL;
        }
    }
    free(buf);
    return rc;
}

int gmt_cli_symbolize(int argc, char **argv)
{
    const char *out = NULL, *in = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-o") == 0 && i + 1 < argc)
            out = argv[++i];
        else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            gmt_cli_symbolize_help(stdout);
            return GMT_EXIT_OK;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            gmt_cli_error("symbolize: unknown option '%s'", argv[i]);
            return GMT_EXIT_USAGE;
        } else if (!in)
            in = argv[i];
        else {
            gmt_cli_error("symbolize: one report at a time");
            return GMT_EXIT_USAGE;
        }
    }
    if (!in || (!out && strcmp(in, "-") == 0)) {
        gmt_cli_symbolize_help(stderr);
        return GMT_EXIT_USAGE;
    }
    cJSON *root = NULL;
    int rc = load(in, &root);
    if (rc) {
        gmt_cli_error("%s: %s", in, rc == -EINVAL ? "not a gpumemtrace report" : strerror(-rc));
        return GMT_EXIT_USAGE;
    }
    gmt_offline_stats_t st;
    char why[256];
    rc = gmt_symbolize_report_json(root, &st, why, sizeof why);
    if (rc) {
        gmt_cli_error("symbolize: %s", why);
        cJSON_Delete(root);
        return GMT_EXIT_FAIL;
    }
    char *text = cJSON_PrintUnformatted(root);
    rc = text ? write_all(out ? out : in, text) : -ENOMEM;
    free(text);
    cJSON_Delete(root);
    if (rc) {
        gmt_cli_error("symbolize: cannot write %s: %s", out ? out : in, strerror(-rc));
        return GMT_EXIT_FAIL;
    }
    fprintf(stderr, "gpumemtrace: named %u of %u native frames", st.named, st.frames);
    if (st.stale)
        fprintf(stderr, "; %u frames left unnamed: their module's build id differs", st.stale);
    if (st.missing) fprintf(stderr, "; %u frames of modules not found here", st.missing);
    if (st.unverified)
        fprintf(stderr, "; %u frames without a build id left as they were", st.unverified);
    fputc('\n', stderr);
    return GMT_EXIT_OK;
}
