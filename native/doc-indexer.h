// Document indexer: NDJSON document bytes to the active fraction's token ids in one call (see doc-indexer.cc).
#pragma once
#include <napi.h>

namespace tidepool {
// docIndexerNew(fieldNames, fieldTypes, auto, maxTokenSize) -> handle
Napi::Value DocIndexerNew(const Napi::CallbackInfo& info);
// docIndexerIndex(handle, buf, offs, first, count, now) -> DocBatch (see src/native/doc-indexer.ts)
Napi::Value DocIndexerIndex(const Napi::CallbackInfo& info);
// docIndexerLearnField(handle, name) -> field number; docIndexerLearnToken(handle, field, text) -> token id
Napi::Value DocIndexerLearnField(const Napi::CallbackInfo& info);
Napi::Value DocIndexerLearnToken(const Napi::CallbackInfo& info);
// docIndexerFind(handle, field, text) -> token id or -1;
// docIndexerFieldTokens(handle, field[, from, to]) -> {text (all ASCII) or units (UTF-16 code units), lens, ids, end}:
// every token of the field, or those whose bytes start at [from, to) of its arena; end: the arena's bytes so far
Napi::Value DocIndexerFind(const Napi::CallbackInfo& info);
Napi::Value DocIndexerFieldTokens(const Napi::CallbackInfo& info);
// docIndexerSortedField(handle, field) -> {ids, lens, bytes, wide}: the field's tokens sorted (see dict-sort.h)
Napi::Value DocIndexerSortedField(const Napi::CallbackInfo& info);
// docIndexerRelease(handle): frees its dictionary now (the fraction is sealed); no call but Bytes may follow
Napi::Value DocIndexerRelease(const Napi::CallbackInfo& info);
// docIndexerBytes(handle) -> bytes held
Napi::Value DocIndexerBytes(const Napi::CallbackInfo& info);
}  // namespace tidepool
