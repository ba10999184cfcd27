/* tests/unit/checkpoint/test_ckpt_dir.c: checkpoint directories as
 * TensorFlow's Saver keeps them: max_to_keep (and its default of 5), the
 * "checkpoint" state file's exact text, a step saved twice, the newest that
 * verifies (a truncated or corrupt newer one skipped and named), no
 * checkpoint, every one corrupt, malformed and TensorFlow-written state
 * files, an old entry outside the directory never deleted, and no file of
 * the pattern left that the state file does not name (dir_orphans). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt_test.h"
#include "rdmaflow/byteorder.h"
#include "tests/common/check.h"

static const char *ck_name(long long step)
{
    static char b[4][64];
    static int k;
    char *s = b[k++ % 4];
    snprintf(s, sizeof b[0], "model.ckpt-%lld.safetensors", step);
    return s;
}

static void save(const char *dir, long long step, int max_to_keep)
{
    rf_ckpt_tensor t[FIX_N];
    fix_tensors(t, step);
    char path[512], want[512];
    CHECK_OK(rf_ckpt_dir_save(dir, step, t, FIX_N, NULL, max_to_keep, path,
                              sizeof path));
    snprintf(want, sizeof want, "%s/%s", dir, ck_name(step));
    CHECK(!strcmp(path, want), "saved as %s, want %s", path, want);
}

/* The state file must say exactly: latest, then steps (oldest first). */
static void check_state(const char *dir, const long long *steps, size_t n)
{
    char path[512], want[4096];
    snprintf(path, sizeof path, "%s/checkpoint", dir);
    size_t len, k = 0;
    char *got = (char *)slurp(path, &len);
    CHECK(got != NULL, "no %s", path);
    k += (size_t)snprintf(want + k, sizeof want - k,
                          "model_checkpoint_path: \"%s\"\n",
                          ck_name(steps[n - 1]));
    for (size_t i = 0; i < n; i++)
        k += (size_t)snprintf(want + k, sizeof want - k,
                              "all_model_checkpoint_paths: \"%s\"\n",
                              ck_name(steps[i]));
    CHECK(len == k && !memcmp(got, want, k), "state file:\n%.*s\nwant:\n%s",
          (int)len, got, want);
    free(got);
    rf_ckpt_list l;
    CHECK_OK(rf_ckpt_dir_list(dir, &l));
    CHECK_EQ_U64(l.n, n);
    for (size_t i = 0; i < n; i++) {
        char p[512];
        snprintf(p, sizeof p, "%s/%s", dir, ck_name(steps[n - 1 - i]));
        CHECK(!strcmp(l.paths[i], p), "list[%zu] %s, want %s", i, l.paths[i],
              p);
        CHECK(access(p, F_OK) == 0, "%s is gone", p);
    }
    rf_ckpt_list_free(&l);
}

static int64_t global_step(const rf_ckpt *ck)
{
    const rf_ckpt_entry *e = rf_ckpt_find(ck, "global_step");
    CHECK(e && e->t.bytes == 8, "%s", "no global_step");
    return (int64_t)rf_get_le64(e->t.data);
}

void case_dir(void)
{
    const char *dir = sp("ck");
    CHECK(mkdir(dir, 0755) == 0, "mkdir %s", dir);
    for (long long s = 100; s <= 700; s += 100)
        save(dir, s, 3);
    check_state(dir, (const long long[]){500, 600, 700}, 3);
    for (long long s = 100; s <= 400; s += 100) {
        char p[512];
        snprintf(p, sizeof p, "%s/%s", dir, ck_name(s));
        CHECK(access(p, F_OK) != 0, "%s was not deleted", p);
    }
    CHECK(dir_entries(dir) == 4, "%d entries (3 + the state file)",
          dir_entries(dir));
    /* a step saved again moves to the end, once */
    save(dir, 600, 3);
    check_state(dir, (const long long[]){500, 700, 600}, 3);
    /* max_to_keep 0 is TensorFlow's default, 5 */
    const char *d5 = sp("ck5");
    CHECK(mkdir(d5, 0755) == 0, "mkdir %s", d5);
    for (long long s = 1; s <= 7; s++)
        save(d5, s, 0);
    check_state(d5, (const long long[]){3, 4, 5, 6, 7}, 5);
    CHECK(dir_entries(d5) == 6, "%d entries", dir_entries(d5));
    /* the latest opens */
    rf_ckpt *ck;
    char path[512];
    CHECK_OK(rf_ckpt_dir_open_latest(d5, &ck, path, sizeof path));
    CHECK(strstr(path, ck_name(7)) != NULL, "opened %s", path);
    CHECK_EQ_U64(global_step(ck), 7);
    CHECK(!strcmp(rf_ckpt_note(ck), ""), "note '%s'", rf_ckpt_note(ck));
    rf_ckpt_close(ck);
    /* refused arguments */
    rf_ckpt_tensor t[FIX_N];
    fix_tensors(t, 1);
    CHECK_ST(rf_ckpt_dir_save(sp("nodir"), 1, t, FIX_N, NULL, 0, NULL, 0),
             RF_ERR_INVALID_ARG);
    CHECK_MSG("nodir");
    CHECK_ST(rf_ckpt_dir_save(dir, -1, t, FIX_N, NULL, 0, NULL, 0),
             RF_ERR_INVALID_ARG);
    CHECK_ST(rf_ckpt_dir_save(dir, 8, t, FIX_N, NULL, 0, path, 4),
             RF_ERR_INVALID_ARG);
    check_state(dir, (const long long[]){500, 700, 600}, 3);
}

void case_dir_latest(void)
{
    const char *dir = sp("ck");
    CHECK(mkdir(dir, 0755) == 0, "mkdir %s", dir);
    rf_ckpt *ck = NULL;
    char path[512];
    /* no checkpoint at all */
    CHECK_ST(rf_ckpt_dir_open_latest(dir, &ck, path, sizeof path),
             RF_ERR_UNAVAILABLE);
    CHECK_MSG("no checkpoint");
    CHECK(ck == NULL, "%s", "handle set");
    rf_ckpt_list l;
    CHECK_OK(rf_ckpt_dir_list(dir, &l));
    CHECK_EQ_U64(l.n, 0);
    for (long long s = 1; s <= 3; s++)
        save(dir, s, 0);
    /* the newest truncated: the previous one is used and the newest named */
    char p3[512], p2[512], p1[512];
    snprintf(p3, sizeof p3, "%s/%s", dir, ck_name(3));
    snprintf(p2, sizeof p2, "%s/%s", dir, ck_name(2));
    snprintf(p1, sizeof p1, "%s/%s", dir, ck_name(1));
    size_t len;
    unsigned char *b = slurp(p3, &len);
    spill(p3, b, len - 3);
    free(b);
    CHECK_OK(rf_ckpt_dir_open_latest(dir, &ck, path, sizeof path));
    CHECK(!strcmp(path, p2), "opened %s, want %s", path, p2);
    CHECK_EQ_U64(global_step(ck), 2);
    CHECK(strstr(rf_ckpt_note(ck), p3) && strstr(rf_ckpt_note(ck), "truncated"),
          "note '%s'", rf_ckpt_note(ck));
    rf_ckpt_close(ck);
    /* the previous one corrupt too (one data byte): the first one */
    b = slurp(p2, &len);
    b[len - 1] ^= 0x40;
    spill(p2, b, len);
    free(b);
    CHECK_OK(rf_ckpt_dir_open_latest(dir, &ck, path, sizeof path));
    CHECK(!strcmp(path, p1), "opened %s, want %s", path, p1);
    CHECK(strstr(rf_ckpt_note(ck), p3) && strstr(rf_ckpt_note(ck), p2) &&
              strstr(rf_ckpt_note(ck), "CRC32C"),
          "note '%s'", rf_ckpt_note(ck));
    rf_ckpt_close(ck);
    /* all bad (the first one deleted) */
    CHECK(unlink(p1) == 0, "%s", "unlink");
    CHECK_ST(rf_ckpt_dir_open_latest(dir, &ck, path, sizeof path),
             RF_ERR_CORRUPT);
    CHECK_MSG(p3); /* the newest, with its reason */
    CHECK_MSG("truncated");
    CHECK_MSG(ck_name(1));
    CHECK_MSG(ck_name(2));
    CHECK(ck == NULL, "%s", "handle set");
    /* a new save works on top of that */
    save(dir, 4, 2);
    CHECK_OK(rf_ckpt_dir_open_latest(dir, &ck, NULL, 0));
    CHECK_EQ_U64(global_step(ck), 4);
    rf_ckpt_close(ck);
    check_state(dir, (const long long[]){3, 4}, 2);
}

static void state(const char *dir, const char *text)
{
    char p[512];
    snprintf(p, sizeof p, "%s/checkpoint", dir);
    spill(p, text, strlen(text));
}

void case_dir_state(void)
{
    const char *dir = sp("ck");
    CHECK(mkdir(dir, 0755) == 0, "mkdir %s", dir);
    rf_ckpt_list l;
    static const struct {
        const char *text, *needle;
    } bad[] = {
        {"model_checkpoint_path: \"a\"\nbogus_field: \"x\"\n",
         "checkpoint:2: unknown field 'bogus_field'"},
        {"model_checkpoint_path: a\n", "checkpoint:1: model_checkpoint_path: "
                                       "not a non-empty quoted string"},
        {"all_model_checkpoint_paths: \"a\"\n", "no model_checkpoint_path"},
        {"", "no model_checkpoint_path"},
        {"model_checkpoint_path \"a\"\n", "checkpoint:1: not \"field: value\""},
        {"model_checkpoint_path: \"a\" junk\n", "checkpoint:1: "
                                                "model_checkpoint_path: text "
                                                "after the string"},
        {"model_checkpoint_path: \"a\"\nmodel_checkpoint_path: \"b\"\n",
         "checkpoint:2: model_checkpoint_path given twice"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        state(dir, bad[i].text);
        CHECK_ST(rf_ckpt_dir_list(dir, &l), RF_ERR_CORRUPT);
        CHECK_MSG(bad[i].needle);
        CHECK_MSG(dir);
        rf_ckpt *ck;
        CHECK_ST(rf_ckpt_dir_open_latest(dir, &ck, NULL, 0), RF_ERR_CORRUPT);
    }
    /* one TensorFlow writes: absolute paths, timestamps, escapes, comments */
    state(dir, "# written by TensorFlow\n"
               "model_checkpoint_path: \"/abs/model.ckpt-2\"\n"
               "all_model_checkpoint_paths: \"model.ckpt-1\"\n"
               "all_model_checkpoint_paths: \"/abs/model.ckpt-2\"\n"
               "all_model_checkpoint_timestamps: 1700000000.5\n"
               "last_preserved_timestamp: 1699999999.25\n"
               "  all_model_checkpoint_paths: 'q\\\"\\101'  \n");
    CHECK_OK(rf_ckpt_dir_list(dir, &l));
    char want[512];
    CHECK_EQ_U64(l.n, 3);
    CHECK(!strcmp(l.paths[0], "/abs/model.ckpt-2"), "[0] %s", l.paths[0]);
    snprintf(want, sizeof want, "%s/q\"A", dir);
    CHECK(!strcmp(l.paths[1], want), "[1] %s", l.paths[1]);
    snprintf(want, sizeof want, "%s/model.ckpt-1", dir);
    CHECK(!strcmp(l.paths[2], want), "[2] %s", l.paths[2]);
    rf_ckpt_list_free(&l);
    /* saving over a malformed state file replaces it */
    state(dir, "garbage\n");
    save(dir, 5, 2);
    check_state(dir, (const long long[]){5}, 1);
    /* an old entry that is not a plain name in the directory is never
     * deleted, whatever max_to_keep says */
    spill(sp("victim"), "v", 1);
    char text[1024];
    snprintf(text, sizeof text,
             "model_checkpoint_path: \"%s\"\n"
             "all_model_checkpoint_paths: \"../victim\"\n"
             "all_model_checkpoint_paths: \"%s\"\n"
             "all_model_checkpoint_paths: \"%s\"\n",
             ck_name(5), sp("victim"), ck_name(5));
    state(dir, text);
    save(dir, 6, 1);
    check_state(dir, (const long long[]){6}, 1);
    CHECK(access(sp("victim"), F_OK) == 0, "%s", "the victim was deleted");
    char p5[512];
    snprintf(p5, sizeof p5, "%s/%s", dir, ck_name(5));
    CHECK(access(p5, F_OK) != 0, "%s was kept", p5);
    /* the state file is written atomically too: no temporary left */
    CHECK(dir_entries(dir) == 2, "%d entries", dir_entries(dir));
}

static bool exists(const char *dir, const char *name)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return access(p, F_OK) == 0;
}

/* Bookkeeping that cannot orphan a file: a stray file of the pattern the
 * state file does not name is deleted by the next save, files of any other
 * name are kept; a new checkpoint whose state file could not be written
 * (the state file a symbolic link into a directory that does not exist)
 * is removed again and the save fails naming both; a missing or corrupt
 * state file is rebuilt from the directory's files of the pattern. */
void case_dir_orphans(void)
{
    const char *dir = sp("ck");
    CHECK(mkdir(dir, 0755) == 0, "mkdir %s", dir);
    save(dir, 1, 5);
    save(dir, 2, 5);
    static const char *const others[] = {"model.ckpt-7.safetensors.bak",
                                         "model.ckpt-.safetensors",
                                         "model.ckpt-1a.safetensors",
                                         "xmodel.ckpt-3.safetensors",
                                         "model.ckpt-3.index",
                                         "model.ckpt-3.data-00000-of-00001",
                                         "model.ckpt--3.safetensors",
                                         ".model.ckpt-3.safetensors.tmp.1.0",
                                         "notes.txt"};
    char p[512];
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, others[i]);
        spill(p, "keep", 4);
    }
    snprintf(p, sizeof p, "%s/%s", dir, ck_name(7));
    spill(p, "stray", 5);
    /* a directory or a link of the pattern is not a checkpoint file */
    snprintf(p, sizeof p, "%s/%s", dir, ck_name(8));
    CHECK(mkdir(p, 0755) == 0, "mkdir %s", p);
    snprintf(p, sizeof p, "%s/%s", dir, ck_name(9));
    CHECK(symlink("notes.txt", p) == 0, "symlink %s", p);
    save(dir, 3, 5);
    check_state(dir, (const long long[]){1, 2, 3}, 3);
    CHECK(!exists(dir, ck_name(7)), "the stray %s was kept", ck_name(7));
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++)
        CHECK(exists(dir, others[i]), "%s (another pattern) was deleted",
              others[i]);
    CHECK(exists(dir, ck_name(8)) && exists(dir, ck_name(9)), "%s",
          "a directory or a link named like a checkpoint was deleted");

    /* the state file cannot be written: the new file goes */
    char sf[512], keep[512];
    snprintf(sf, sizeof sf, "%s/checkpoint", dir);
    snprintf(keep, sizeof keep, "%s/checkpoint.keep", sp(""));
    CHECK(rename(sf, keep) == 0, "rename %s", sf);
    CHECK(symlink(sp("nodir/checkpoint"), sf) == 0, "symlink %s", sf);
    rf_ckpt_tensor t[FIX_N];
    fix_tensors(t, 4);
    CHECK(rf_ckpt_dir_save(dir, 4, t, FIX_N, NULL, 5, NULL, 0) != RF_OK, "%s",
          "saved with a state file that cannot be written");
    CHECK_MSG("nodir");
    CHECK_MSG("model.ckpt-4.safetensors removed: no state file names it");
    CHECK(!exists(dir, ck_name(4)), "%s left behind, named by nothing",
          ck_name(4));
    for (long long s = 1; s <= 3; s++)
        CHECK(exists(dir, ck_name(s)), "%s was deleted", ck_name(s));
    CHECK(unlink(sf) == 0 && rename(keep, sf) == 0, "%s", "restore");
    save(dir, 5, 5);
    check_state(dir, (const long long[]){1, 2, 3, 5}, 4);

    /* no state file: rebuilt from the files, oldest step first */
    CHECK(unlink(sf) == 0, "unlink %s", sf);
    save(dir, 6, 3);
    check_state(dir, (const long long[]){3, 5, 6}, 3);
    CHECK(!exists(dir, ck_name(1)) && !exists(dir, ck_name(2)), "%s",
          "model.ckpt-1 and 2 (beyond max_to_keep) kept");
    /* a corrupt one: the same, its files counted, not swept */
    state(dir, "garbage\n");
    save(dir, 7, 4);
    check_state(dir, (const long long[]){3, 5, 6, 7}, 4);
    CHECK(exists(dir, ck_name(3)), "%s", "model.ckpt-3 deleted");
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++)
        CHECK(exists(dir, others[i]), "%s (another pattern) was deleted",
              others[i]);
}
