#!/usr/bin/env bash
# tests/unit/checkpoint/rf_ckpt_test.sh CASE TEST_PROGRAM RF_CKPT READER:
#   python  the fixture written by the library read by check_reader.py
#           (python3 with struct and json only; exit 77 without python3)
#   tool    rf-ckpt list/verify/diff: exit codes and output on the fixture,
#           damaged copies, a checkpoint directory and usage errors; verify
#           is strict: copies of the fixture with CRC32Cs taken out
#           (strip_crcs.py: none at all, no tensor's, one tensor's, not
#           the header's) fail naming the file and the tensors, pass with
#           --allow-unchecked, which reports how many went unchecked and
#           still checks the CRC32Cs that are there; a tensor name and a
#           directory holding terminal escapes are printed escaped, a
#           header with a key twice is refused naming it
# The files come from "TEST_PROGRAM emit DIR" (test_checkpoint.c).
set -uo pipefail
case_name=$1 prog=$2 ckpt=$3 reader=$4
source "$(dirname "${BASH_SOURCE[0]}")/../../common/lib.sh"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rf-ckpt-sh.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
"$prog" emit "$tmp" || { echo "FAIL: $prog emit"; exit 1; }

# run EXPECTED_EXIT NAME CMD...: output in $tmp/out (stdout + stderr)
run() {
    local want=$1 name=$2 rc
    shift 2
    "$@" >"$tmp/out" 2>&1
    rc=$?
    if [[ $rc -eq $want ]]; then ok "$name: exit $rc"; else
        fail "$name: exit $rc, want $want"
        show "$tmp/out"
    fi
}
has() { # NAME TEXT: $tmp/out contains TEXT
    if grep -qF -- "$2" "$tmp/out"; then ok "$1: '$2'"; else
        fail "$1: no '$2' in"
        show "$tmp/out"
    fi
}

if [[ $case_name == python ]]; then
    command -v python3 >/dev/null || { echo "no python3: skipped"; exit 77; }
    run 0 "python reader" python3 "$reader" "$tmp/fixture.safetensors" \
        "$tmp/expect.txt"
    has "python reader" "8 tensors"
    # the reader does find a wrong value
    sed 's/^global_step I64 \[\] 8 \([0-9a-f]*\) 42$/global_step I64 [] 8 \1 43/' \
        "$tmp/expect.txt" >"$tmp/wrong.txt"
    run 1 "python reader, wrong expectation" python3 "$reader" \
        "$tmp/fixture.safetensors" "$tmp/wrong.txt"
    has "python reader, wrong expectation" "global_step[0]: 42, expected 43"
    rft_finish
fi

f=$tmp/fixture.safetensors
# --help and usage errors
run 0 "--help" "$ckpt" --help
has "--help" "rf-ckpt diff A B [--rtol R] [--atol A]"
run 2 "no command" "$ckpt"
run 2 "unknown command" "$ckpt" frobnicate "$f"
has "unknown command" "frobnicate"
run 2 "list without a path" "$ckpt" list
run 2 "list --bogus" "$ckpt" list --bogus
has "list --bogus" "--bogus"
run 2 "diff --bogus" "$ckpt" diff "$f" "$f" --bogus
has "diff --bogus" "unknown flag --bogus"
run 2 "diff --rtol without a value" "$ckpt" diff "$f" "$f" --rtol
has "diff --rtol without a value" "--rtol needs a non-negative number"
run 2 "diff --atol=x" "$ckpt" diff "$f" "$f" --atol=x
has "diff --atol=x" "--atol=x needs a non-negative number"
run 2 "diff with one path" "$ckpt" diff "$f"

# list: every tensor with dtype, shape, bytes and the CRC32C the test
# computed from its own arrays
run 0 "list" "$ckpt" list "$f"
has "list" "8 tensors, CRC32C verified"
while read -r name dtype shape bytes crc _; do
    if grep -qE "^$name +$dtype +\\$shape +$bytes +$crc\$" "$tmp/out"; then
        ok "list: $name $dtype $shape $bytes $crc"
    else
        fail "list: no line '$name $dtype $shape $bytes $crc'"
        show "$tmp/out" 20
    fi
done <"$tmp/expect.txt"
run 0 "list a plain safetensors file" "$ckpt" list "$tmp/plain.safetensors"
has "list a plain safetensors file" "no CRC32C stored"

# verify: the good file, a flipped data byte, a truncated copy
run 0 "verify" "$ckpt" verify "$f"
has "verify" "every CRC32C matches"
size=$(stat -c %s "$f")
cp "$f" "$tmp/flip.safetensors"
printf '\x55' | dd of="$tmp/flip.safetensors" bs=1 seek=$((size - 1)) \
    conv=notrunc status=none
run 1 "verify a flipped byte" "$ckpt" verify "$tmp/flip.safetensors"
has "verify a flipped byte" "CRC32C"
head -c $((size - 5)) "$f" >"$tmp/short.safetensors"
run 1 "verify a truncated file" "$ckpt" verify "$tmp/short.safetensors"
has "verify a truncated file" "truncated"
run 1 "verify a missing file" "$ckpt" verify "$tmp/absent"

# verify is strict: every tensor's CRC32C and the header's must be there.
# The copies below differ from the fixture only in the CRC32Cs taken out
# of its metadata (strip_crcs.py rebuilds the header as the library writes
# it, which "same" proves by giving the fixture's bytes back).
py=/usr/bin/python3
strip=$(dirname "${BASH_SOURCE[0]}")/strip_crcs.py
run 0 "strip_crcs.py same" "$py" "$strip" "$f" "$tmp/same.st" same
cmp -s "$f" "$tmp/same.st" && ok "strip_crcs.py rebuilds the fixture's bytes" ||
    fail "strip_crcs.py same: not the fixture's bytes"
run 0 "strip_crcs.py all" "$py" "$strip" "$f" "$tmp/nocrc.st" all
run 0 "strip_crcs.py tensors" "$py" "$strip" "$f" "$tmp/notensorcrc.st" tensors
run 0 "strip_crcs.py one" "$py" "$strip" "$f" "$tmp/onecrc.st" one b/i32
run 0 "strip_crcs.py header" "$py" "$strip" "$f" "$tmp/noheadercrc.st" header
# strict (the default): refused, naming the file and what has no CRC32C
run 1 "verify no CRC32C at all" "$ckpt" verify "$tmp/nocrc.st"
has "verify no CRC32C at all" "FAIL $tmp/nocrc.st: cannot be verified: 8 of 8 tensors have no CRC32C (\"crc32c/<name>\") and the header has none (\"crc32c.header\"): 'a/f32', 'b/i32', 'c/i64', 'd/bool', 'e/empty' and 3 more"
has "verify no CRC32C at all" "--allow-unchecked accepts it"
run 1 "verify no tensor CRC32C" "$ckpt" verify "$tmp/notensorcrc.st"
has "verify no tensor CRC32C" "FAIL $tmp/notensorcrc.st: cannot be verified: 8 of 8 tensors have no CRC32C (\"crc32c/<name>\"): 'a/f32',"
run 1 "verify one tensor CRC32C missing" "$ckpt" verify "$tmp/onecrc.st"
has "verify one tensor CRC32C missing" "FAIL $tmp/onecrc.st: cannot be verified: 1 of 8 tensors has no CRC32C (\"crc32c/<name>\"): 'b/i32'"
run 1 "verify no header CRC32C" "$ckpt" verify "$tmp/noheadercrc.st"
has "verify no header CRC32C" "FAIL $tmp/noheadercrc.st: cannot be verified: the header has no CRC32C (\"crc32c.header\")"
run 1 "verify the library's plain file" "$ckpt" verify "$tmp/plain.safetensors"
has "verify the library's plain file" "1 of 1 tensors has no CRC32C"
has "verify the library's plain file" "'w'"
# --allow-unchecked (before or after the path): accepted, counted
run 0 "verify --allow-unchecked, no CRC32C at all" "$ckpt" verify \
    --allow-unchecked "$tmp/nocrc.st"
has "verify --allow-unchecked, no CRC32C at all" "ok $tmp/nocrc.st: 8 tensors, 8 unchecked (no CRC32C), the header unchecked (no CRC32C); only the layout checked (--allow-unchecked)"
run 0 "verify --allow-unchecked, no tensor CRC32C" "$ckpt" verify \
    "$tmp/notensorcrc.st" --allow-unchecked
has "verify --allow-unchecked, no tensor CRC32C" "8 tensors, 8 unchecked (no CRC32C), the header checked; every CRC32C there matches"
run 0 "verify --allow-unchecked, one missing" "$ckpt" verify \
    --allow-unchecked "$tmp/onecrc.st"
has "verify --allow-unchecked, one missing" "ok $tmp/onecrc.st: 8 tensors, 1 unchecked (no CRC32C), the header checked; every CRC32C there matches"
run 0 "verify --allow-unchecked, no header CRC32C" "$ckpt" verify \
    --allow-unchecked "$tmp/noheadercrc.st"
has "verify --allow-unchecked, no header CRC32C" "8 tensors, 0 unchecked (no CRC32C), the header unchecked (no CRC32C); every CRC32C there matches"
run 0 "verify --allow-unchecked, a complete file" "$ckpt" verify \
    --allow-unchecked "$f"
has "verify --allow-unchecked, a complete file" "ok $f: 8 tensors, every CRC32C matches"
# --allow-unchecked still checks what is there: a changed byte in a tensor
# with a CRC32C, or in the header when it has one, fails; in the tensor
# without one it goes unseen, which is why the default is strict
flip() { # SRC DST TENSOR: DST is SRC with TENSOR's first data byte changed
    "$py" - "$1" "$2" "$3" <<'PY'
import json, struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
(n,) = struct.unpack("<Q", b[:8])
at = 8 + n + json.loads(b[8:8 + n])[sys.argv[3]]["data_offsets"][0]
b[at] ^= 0x01
open(sys.argv[2], "wb").write(b)
PY
}
flip "$tmp/onecrc.st" "$tmp/onecrc-flip-a.st" a/f32
run 1 "verify --allow-unchecked, a checked tensor changed" "$ckpt" verify \
    --allow-unchecked "$tmp/onecrc-flip-a.st"
has "verify --allow-unchecked, a checked tensor changed" "tensor 'a/f32' (file bytes ["
flip "$tmp/onecrc.st" "$tmp/onecrc-flip-b.st" b/i32
run 0 "verify --allow-unchecked, the unchecked tensor changed" "$ckpt" \
    verify --allow-unchecked "$tmp/onecrc-flip-b.st"
has "verify --allow-unchecked, the unchecked tensor changed" "1 unchecked"
run 1 "verify, the unchecked tensor changed" "$ckpt" verify \
    "$tmp/onecrc-flip-b.st"
has "verify, the unchecked tensor changed" "'b/i32'"
sed 's/"producer":"rf_test_checkpoint"/"producer":"rf_test_checkpoinT"/' \
    "$tmp/notensorcrc.st" >"$tmp/notensorcrc-meta.st"
if cmp -s "$tmp/notensorcrc.st" "$tmp/notensorcrc-meta.st"; then
    fail "the producer value to change is not in the header"
else
    run 1 "verify --allow-unchecked, the header changed" "$ckpt" verify \
        --allow-unchecked "$tmp/notensorcrc-meta.st"
    has "verify --allow-unchecked, the header changed" "has CRC32C"
fi
# usage: the flag is verify's alone, and takes no value
run 2 "verify --allow-unchecked without a path" "$ckpt" verify \
    --allow-unchecked
has "verify --allow-unchecked without a path" "verify needs FILE|DIR"
run 2 "verify --allow-unchecked=yes" "$ckpt" verify --allow-unchecked=yes "$f"
has "verify --allow-unchecked=yes" "--allow-unchecked takes no value"
run 2 "list --allow-unchecked" "$ckpt" list --allow-unchecked "$f"
has "list --allow-unchecked" "--allow-unchecked: only verify takes it"
run 0 "--help names --allow-unchecked" "$ckpt" --help
has "--help names --allow-unchecked" "rf-ckpt verify [--allow-unchecked] FILE|DIR"

# a checkpoint directory: steps 1..3 (rf_ckpt_dir_save's own files verify
# strictly); one of them without CRC32Cs; then the newest corrupt
d=$tmp/ckdir
run 0 "verify DIR" "$ckpt" verify "$d"
n=$(grep -c '^ok .*: 8 tensors, every CRC32C matches$' "$tmp/out")
[[ $n -eq 3 ]] && ok "verify DIR: 3 ok lines" || fail "verify DIR: $n ok lines"
cp -r "$d" "$tmp/ckdir-stripped"
"$py" "$strip" "$d/model.ckpt-2.safetensors" \
    "$tmp/ckdir-stripped/model.ckpt-2.safetensors" all
run 1 "verify DIR with an unchecked file" "$ckpt" verify "$tmp/ckdir-stripped"
has "verify DIR with an unchecked file" "FAIL $tmp/ckdir-stripped/model.ckpt-2.safetensors: cannot be verified: 8 of 8 tensors"
has "verify DIR with an unchecked file" "ok $tmp/ckdir-stripped/model.ckpt-3.safetensors: 8 tensors, every CRC32C matches"
run 0 "verify --allow-unchecked DIR with an unchecked file" "$ckpt" verify \
    --allow-unchecked "$tmp/ckdir-stripped"
has "verify --allow-unchecked DIR with an unchecked file" "ok $tmp/ckdir-stripped/model.ckpt-2.safetensors: 8 tensors, 8 unchecked"
run 0 "list DIR" "$ckpt" list "$d"
has "list DIR" "$d/model.ckpt-3.safetensors: 8 tensors"
has "list DIR" "$d/model.ckpt-1.safetensors"
printf 'xx' | dd of="$d/model.ckpt-3.safetensors" bs=1 seek=100 \
    conv=notrunc status=none
run 1 "verify DIR with a corrupt newest" "$ckpt" verify "$d"
has "verify DIR with a corrupt newest" "FAIL $d/model.ckpt-3.safetensors"
has "verify DIR with a corrupt newest" "ok $d/model.ckpt-2.safetensors"
run 0 "list DIR with a corrupt newest" "$ckpt" list "$d"
has "list DIR with a corrupt newest" "skipped $d/model.ckpt-3.safetensors"
has "list DIR with a corrupt newest" "$d/model.ckpt-2.safetensors: 8 tensors"
empty=$tmp/empty
mkdir "$empty"
run 1 "verify an empty DIR" "$ckpt" verify "$empty"
has "verify an empty DIR" "no checkpoint"

# diff (near: a/f32[0] is -1 + 1e-3f in float32, 0.999987e-3 away)
run 0 "diff equal" "$ckpt" diff "$f" "$f"
has "diff equal" "equal: 8 tensors"
run 1 "diff near" "$ckpt" diff "$f" "$tmp/near.safetensors"
has "diff near" "differs: a/f32: 1 of 6 elements, max abs difference 0.000999987"
run 0 "diff near --atol 0.01" "$ckpt" diff "$f" "$tmp/near.safetensors" \
    --atol 0.01
run 0 "diff near --rtol=0.01" "$ckpt" diff --rtol=0.01 "$f" \
    "$tmp/near.safetensors"
run 1 "diff near --atol 0.0001" "$ckpt" diff "$f" "$tmp/near.safetensors" \
    --atol 0.0001
run 1 "diff other" "$ckpt" diff "$f" "$tmp/other.safetensors"
has "diff other" "only in $f: d/bool"
has "diff other" "only in $tmp/other.safetensors: y/extra"
has "diff other" "dtype differs: c/i64: int64 vs int32"
has "diff other" "shape differs: b/i32: [4] vs [2,2]"
run 1 "diff a missing file" "$ckpt" diff "$f" "$tmp/absent"

# names from the file printed escaped (issue 25 item 4): a tensor name
# that would clear the screen, in list, diff and a directory's listing;
# a header with a key twice is refused naming it
no_control() { # NAME: $tmp/out has no control byte but the newline
    if LC_ALL=C grep -qP '[\x00-\x09\x0b-\x1f\x7f]|\xc2[\x80-\x9f]' \
        "$tmp/out"; then
        fail "$1: a control byte in the output"
        show "$tmp/out"
    else ok "$1: no control byte"; fi
}
evd=$tmp/$'ev\e[2Jdir'
mkdir "$evd"
python3 - "$evd/model.ckpt-1.safetensors" "$tmp/dup.safetensors" <<'PY'
import json, struct, sys
def st(h, blob):
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + blob
f4 = struct.pack("<2f", 1.0, 2.0)
evil = {"\x1b[2J\x1b[31mEVIL\n": {"dtype": "F32", "shape": [2],
                                   "data_offsets": [0, 8]}}
open(sys.argv[1], "wb").write(st(json.dumps(evil).encode(), f4))
open(sys.argv[2], "wb").write(st(b'{"a":{"dtype":"F32","shape":[1],'
    b'"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],'
    b'"data_offsets":[4,8]}}', f4))
PY
printf '%s\n' 'model_checkpoint_path: "model.ckpt-1.safetensors"' >"$evd/checkpoint"
ev=$evd/model.ckpt-1.safetensors
evq='\x1b[2J\x1b[31mEVIL\n'
run 0 "list an evil tensor name" "$ckpt" list "$ev"
no_control "list an evil tensor name"
has "list an evil tensor name" "$evq                    F32   [2]"
has "list an evil tensor name" "${tmp}/ev\x1b[2Jdir/model.ckpt-1.safetensors: 1 tensors"
run 0 "list a DIR with an evil name" "$ckpt" list "$evd"
no_control "list a DIR with an evil name"
has "list a DIR with an evil name" "  ${tmp}/ev\x1b[2Jdir/model.ckpt-1.safetensors (opened)"
run 1 "diff an evil tensor name" "$ckpt" diff "$f" "$ev"
no_control "diff an evil tensor name"
has "diff an evil tensor name" "only in ${tmp}/ev\x1b[2Jdir/model.ckpt-1.safetensors: $evq"
run 1 "verify an evil tensor name" "$ckpt" verify "$ev"
no_control "verify an evil tensor name"
has "verify an evil tensor name" "'$evq'"
run 1 "list a header with a key twice" "$ckpt" list "$tmp/dup.safetensors"
has "list a header with a key twice" \
    'the header: the key "a" is in one object twice, at bytes 1 and 54'
run 1 "verify a header with a key twice" "$ckpt" verify "$tmp/dup.safetensors"
has "verify a header with a key twice" 'the key "a" is in one object twice'

# inputs that are not regular files: refused, a FIFO without blocking
mkfifo "$tmp/fifo"
run 1 "verify a FIFO" timeout "$(t 30)" "$ckpt" verify "$tmp/fifo"
has "verify a FIFO" "$tmp/fifo is not a regular file"
run 1 "list /dev/null" "$ckpt" list /dev/null
has "list /dev/null" "/dev/null is not a regular file"
run 1 "diff against a FIFO" timeout "$(t 30)" "$ckpt" diff "$f" "$tmp/fifo"
has "diff against a FIFO" "not a regular file"
ln -s "$f" "$tmp/link.safetensors"
run 0 "verify through a symbolic link" "$ckpt" verify "$tmp/link.safetensors"
# long arguments are echoed cut, the reason kept
long=$(printf 'z%.0s' $(seq 2000))
run 2 "a long unknown command" "$ckpt" "$long" "$f"
has "a long unknown command" "unknown command '${long:0:64}...'"
run 2 "a long tolerance" "$ckpt" diff "$f" "$f" --atol="$long"
has "a long tolerance" "--atol=${long:0:57}... needs a non-negative number"
rft_finish
