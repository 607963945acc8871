// Posting-list work (decode, intersect, union, difference, count, range): exported to JS by addon.cc.
#pragma once
#include <napi.h>

namespace tidepool {
// decodePostings(buf, offset, length, count) -> Uint32Array
Napi::Value DecodePostings(const Napi::CallbackInfo& info);
// intersectPostings(a, b), unionPostings(a, b), differencePostings(a, b) -> Uint32Array
Napi::Value IntersectPostings(const Napi::CallbackInfo& info);
Napi::Value UnionPostings(const Napi::CallbackInfo& info);
Napi::Value DifferencePostings(const Napi::CallbackInfo& info);
// unionManyPostings(lists, universe) -> Uint32Array
Napi::Value UnionManyPostings(const Napi::CallbackInfo& info);
// countInRange(ids, lo, hi) -> number
Napi::Value CountInRange(const Napi::CallbackInfo& info);
// rangeOfIds(lo, hi) -> Uint32Array
Napi::Value RangeOfIds(const Napi::CallbackInfo& info);
}  // namespace tidepool
