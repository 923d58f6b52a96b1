#!/bin/sh
# The exported ABI of libsimdgrad.so against the baseline kept here, with libabigail (Debian:
# abigail-tools). make abi-check and make abi-baseline call it; the policy is
# docs/embedding.md's "ABI policy".
#
#   abi/check.sh check LIB [BASE_REF]   fails (exit 1) when LIB's ABI is incompatible with
#                                       abi/libsimdgrad.abi, or when LIB's SONAME differs from
#                                       the baseline's (the baseline was not regenerated);
#                                       with BASE_REF (a git revision), also when the baseline
#                                       at BASE_REF is incompatible with LIB under the same
#                                       SONAME (a baseline regenerated over a break that kept
#                                       the SONAME)
#   abi/check.sh baseline LIB           writes abi/libsimdgrad.abi from LIB
#
# LIB must carry DWARF (make abi-check builds it with -g, at -O0, in build-abi/). Only the
# types of include/simdgrad/ count; compatible changes are the ones libabigail deems harmless
# (an enumerator appended, ...), added functions, and the suppressions in
# abi/suppressions.abignore (a slot appended to struct sg_backend).
set -eu

mode=${1:?usage: abi/check.sh check|baseline LIB [BASE_REF]}
lib=${2:?usage: abi/check.sh check|baseline LIB [BASE_REF]}
base_ref=${3:-}
root=$(cd "$(dirname "$0")/.." && pwd)
baseline=$root/abi/libsimdgrad.abi
suppressions=$root/abi/suppressions.abignore
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The ABI of a library as libabigail's XML: public types only, no source locations (the
# baseline must not depend on where the tree was checked out).
dump() {
  abidw --headers-dir "$root/include/simdgrad" --drop-private-types --no-show-locs \
    --no-corpus-path --out-file "$2" "$1"
}
soname_of() { sed -n "1s/.* soname='\([^']*\)'.*/\1/p" "$1"; }
# abidiff's exit status is a bit set: 1 error, 2 usage error, 4 ABI change, 8 incompatible.
compare() { # OLD NEW REPORT [abidiff options]: prints abidiff's status
  old=$1 new=$2 report=$3
  shift 3
  rc=0
  abidiff --suppressions "$suppressions" "$@" "$old" "$new" >"$report" 2>&1 || rc=$?
  if [ $((rc & 3)) -ne 0 ]; then
    cat "$report" >&2
    echo "simdgrad: abidiff failed (status $rc)" >&2
    exit 2
  fi
  echo "$rc"
}

case $mode in
baseline)
  dump "$lib" "$baseline"
  echo "simdgrad: wrote abi/libsimdgrad.abi for $(soname_of "$baseline"); commit it"
  exit 0
  ;;
check) ;;
*)
  echo "usage: abi/check.sh check|baseline LIB [BASE_REF]" >&2
  exit 2
  ;;
esac

dump "$lib" "$work/new.abi"
new_soname=$(soname_of "$work/new.abi")
old_soname=$(soname_of "$baseline")
if [ "$new_soname" != "$old_soname" ]; then
  echo "simdgrad: the library's SONAME is $new_soname, abi/libsimdgrad.abi is for $old_soname:"
  echo "  regenerate the baseline in the same change (make abi-baseline) and commit it"
  exit 1
fi

rc=$(compare "$baseline" "$work/new.abi" "$work/report" --no-added-syms)
if [ "$rc" -ne 0 ]; then
  cat "$work/report"
  echo "simdgrad: the ABI of $new_soname changed incompatibly against abi/libsimdgrad.abi."
  echo "  If the break is meant: add one to SIMDGRAD_SOVERSION in CMakeLists.txt (and to"
  echo "  SG_BACKEND_ABI_VERSION if a released slot of struct sg_backend moved), then"
  echo "  make abi-baseline, and commit all three together (docs/embedding.md, ABI policy)."
  echo "  If not: append instead of inserting (Note [Appending slots] in backend.h)."
  exit 1
fi

if [ -n "$base_ref" ] && git -C "$root" cat-file -e "$base_ref:abi/libsimdgrad.abi" 2>/dev/null; then
  git -C "$root" show "$base_ref:abi/libsimdgrad.abi" >"$work/base.abi"
  base_soname=$(soname_of "$work/base.abi")
  rc=$(compare "$work/base.abi" "$work/new.abi" "$work/report" --no-added-syms)
  if [ "$rc" -ne 0 ] && [ "$base_soname" = "$new_soname" ]; then
    cat "$work/report"
    echo "simdgrad: incompatible with the baseline at $base_ref under the same SONAME"
    echo "  ($new_soname): the baseline was regenerated over an ABI break without a new"
    echo "  SONAME; add one to SIMDGRAD_SOVERSION in CMakeLists.txt and regenerate it."
    exit 1
  fi
  echo "simdgrad: against $base_ref ($base_soname): $([ "$rc" -eq 0 ] && echo compatible ||
    echo "incompatible, with a new SONAME")"
fi

rc=$(compare "$baseline" "$work/new.abi" "$work/report")
if [ "$rc" -ne 0 ]; then
  cat "$work/report"
  echo "simdgrad: compatible additions that abi/libsimdgrad.abi does not hold yet: refresh it"
  echo "  (make abi-baseline) so that a later removal is caught"
fi
echo "simdgrad: the ABI of $new_soname is compatible with abi/libsimdgrad.abi"
