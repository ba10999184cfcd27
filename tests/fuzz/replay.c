/* tests/fuzz/replay.c: the main() of a fuzz target outside libFuzzer (the
 * default gcc build and the sanitizer builds): feeds every file named on
 * the command line, or found directly in a directory named there (sorted,
 * so runs repeat), to LLVMFuzzerTestOneInput once. ctest runs each target
 * this way over its seed corpus, so the seeds and the inputs of past
 * crashes stay regression tests where libFuzzer is not built. Exit status
 * 0 when every input ran (a failed check aborts), 1 on an unreadable path
 * or no inputs at all. */
#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Runs the target on the file at path; false if it cannot be read. */
static bool run_file(const char *path)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        perror(path);
        return false;
    }
    size_t cap = 4096, n = 0;
    uint8_t *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n, fp);
        if (n < cap)
            break;
        uint8_t *grown = realloc(buf, cap * 2);
        if (!grown) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = grown;
        cap *= 2;
    }
    bool ok = buf && !ferror(fp);
    fclose(fp);
    if (!ok) {
        fprintf(stderr, "%s: cannot read\n", path);
        free(buf);
        return false;
    }
    /* A copy of exactly n bytes, so ASan sees reads past the input. */
    uint8_t *exact = malloc(n ? n : 1);
    if (!exact) {
        free(buf);
        return false;
    }
    memcpy(exact, buf, n);
    free(buf);
    LLVMFuzzerTestOneInput(exact, n);
    free(exact);
    return true;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Runs every regular file directly in dir, in name order; the count in
 * *ran. */
static bool run_dir(const char *dir, size_t *ran)
{
    DIR *d = opendir(dir);
    if (!d) {
        perror(dir);
        return false;
    }
    char **names = NULL;
    size_t n = 0;
    bool ok = true;
    for (struct dirent *e; ok && (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        char **grown = realloc(names, (n + 1) * sizeof *names);
        char *path = grown ? malloc(len) : NULL;
        if (grown)
            names = grown;
        if (!path) {
            ok = false;
            break;
        }
        snprintf(path, len, "%s/%s", dir, e->d_name);
        names[n++] = path;
    }
    closedir(d);
    if (n)
        qsort(names, n, sizeof *names, by_name);
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        if (ok && stat(names[i], &st) == 0 && S_ISREG(st.st_mode)) {
            ok = run_file(names[i]);
            *ran += ok;
        }
        free(names[i]);
    }
    free(names);
    return ok;
}

int main(int argc, char **argv)
{
    size_t ran = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            perror(argv[i]);
            return 1;
        }
        if (S_ISDIR(st.st_mode) ? !run_dir(argv[i], &ran)
                                : !(ran++, run_file(argv[i])))
            return 1;
    }
    printf("%s: %zu input(s) ran\n", argc > 0 ? argv[0] : "replay", ran);
    return ran ? 0 : 1;
}
