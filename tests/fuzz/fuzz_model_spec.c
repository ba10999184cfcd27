/* tests/fuzz/fuzz_model_spec.c: libFuzzer target for rf-trainer's --model
 * values (tools/trainer/model.c tr_model_parse, compiled into this target;
 * tests/ may include a tool's own header) and --optimizer values
 * (optim/config.c rf_optim_parse). The input, up to its first NUL, is one
 * value for each. A refusal must say why; a model that parses has widths in
 * range and describes itself; an optimizer that parses is that name, and
 * with its required values set (NaN in the defaults) validates and
 * formats. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "model.h"
#include "rdmaflow/optim.h"
#include "rdmaflow/status.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    if (!text)
        return 0;
    tr_model m;
    char err[256] = "";
    if (tr_model_parse(text, &m, err, sizeof err) == 0) {
        REQUIRE(m.nwidths >= 0 && m.nwidths <= TR_MODEL_MAX_LAYERS);
        for (int i = 0; i < m.nwidths; i++)
            REQUIRE(m.widths[i] >= 1 && m.widths[i] <= TR_MODEL_MAX_WIDTH);
        char desc[512];
        REQUIRE(tr_model_describe(&m, desc, sizeof desc) > 0);
    } else {
        REQUIRE(err[0]);
    }
    rf_optim_config cfg;
    if (rf_optim_parse(text, &cfg) == RF_OK) {
        /* The values TensorFlow requires are NaN until the caller sets them
         * (rf-trainer's --learning_rate, --momentum); then it validates. */
        if (isnan(cfg.learning_rate))
            cfg.learning_rate = 0.01f;
        if (isnan(cfg.momentum))
            cfg.momentum = 0.9f;
        REQUIRE(rf_optim_validate(&cfg) == RF_OK);
        char buf[256];
        REQUIRE(rf_optim_format(&cfg, buf, sizeof buf) > 0);
        REQUIRE(strcmp(rf_optim_kind_name(cfg.kind), text) == 0);
    } else {
        REQUIRE(rf_error_message()[0]);
    }
    free(text);
    return 0;
}
