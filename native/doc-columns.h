// Column-wise document blocks of sealed fractions made and decoded in C++: exported by addon.cc. Twin and reference:
// src/logstore/storage/doc-columns.ts.
#pragma once
#include <napi.h>

namespace tidepool {
// decodeDocBlock(block: Uint8Array, times: Float64Array, first, columns?: per keyword column [table: Uint8Array,
// starts: Uint32Array, ords: Uint32Array] or undefined) -> [raw: Buffer, offsets: Uint32Array] or null (the twin
// decides: a damaged block, a time before 1970, a reference to a column not given or not holding the token)
Napi::Value DecodeDocBlock(const Napi::CallbackInfo& info);
// encodeDocBlock(raw: Uint8Array, offsets: Uint32Array (documents + 1), times: Float64Array (one per document),
// refs?: [key, column, table, starts, ords (one per document)][]) -> Buffer: the bytes encodeDocBlockTs writes for
// the same documents
Napi::Value EncodeDocBlock(const Napi::CallbackInfo& info);
// dictTokenTable(dict: Uint8Array, lensAt, lensEnd, restAt, count, units) -> [table: Buffer, starts: Uint32Array]: one
// front-coded field of a decompressed dict.bin (its prefix varints at [lensAt, lensEnd), its rests' `units` bytes at
// restAt) as a token table by rank, when every byte of its rests is below 128; else, or when anything does not
// check, null (the twin, token-dict.ts asciiTable, decides). What a format 5 reader's first block of a fraction needs.
Napi::Value DictTokenTable(const Napi::CallbackInfo& info);
}  // namespace tidepool
