/* tests/fuzz/fuzz_ctr_spec.c: libFuzzer target for the click-through data
 * set's spec text (graph/data/ctr_spec.c rf_ctr_spec_parse). The input, up
 * to its first NUL, is one spec. A refusal must say why and leave the spec
 * alone; a spec that parses is in range, formats to text that parses back
 * to the same text, and generates an example whose ids are inside their
 * vocabularies. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "rdmaflow/ctr_data.h"
#include "rdmaflow/status.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    if (!text)
        return 0;
    rf_ctr_spec s, before;
    memset(&s, 0x33, sizeof s);
    before = s;
    rf_error_clear();
    if (rf_ctr_spec_parse(text, &s) == RF_OK) {
        REQUIRE(rf_ctr_spec_check(&s) == RF_OK);
        char a[1024], b[1024];
        REQUIRE(rf_ctr_spec_format(&s, a, sizeof a) == RF_OK);
        rf_ctr_spec back;
        REQUIRE(rf_ctr_spec_parse(a, &back) == RF_OK);
        REQUIRE(rf_ctr_spec_format(&back, b, sizeof b) == RF_OK);
        REQUIRE(strcmp(a, b) == 0);
        int64_t ids[RF_CTR_MAX_CAT];
        float dense[RF_CTR_MAX_DENSE], label;
        double p;
        REQUIRE(rf_ctr_example(&s, RF_DATA_TRAIN, s.train_size - 1, ids, dense,
                               &label, &p) == RF_OK);
        for (uint32_t f = 0; f < s.num_cat; f++)
            REQUIRE(ids[f] >= 0 && ids[f] < s.vocab[f]);
        REQUIRE(label == 0.0f || label == 1.0f);
        REQUIRE(p >= 0 && p <= 1);
    } else {
        REQUIRE(rf_error_message()[0]);
        REQUIRE(memcmp(&s, &before, sizeof s) == 0);
    }
    free(text);
    return 0;
}
