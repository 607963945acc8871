// The tidepool native addon: exports only; each function lives in its own file.
#include <napi.h>

#include "doc-columns.h"
#include "doc-indexer.h"
#include "fd-passing.h"
#include "framing.h"
#include "hit-writer.h"
#include "postings.h"
#include "relay.h"

static Napi::Object Init(Napi::Env env, Napi::Object exports) {
  napi_value scan;
  napi_create_function(env, "scanFrames", NAPI_AUTO_LENGTH, tidepool::ScanFrames, nullptr, &scan);
  exports.Set("scanFrames", Napi::Value(env, scan));
  napi_value writeHits;
  napi_create_function(env, "writeHits", NAPI_AUTO_LENGTH, tidepool::WriteHits, nullptr, &writeHits);
  exports.Set("writeHits", Napi::Value(env, writeHits));
  napi_value joinHits;
  napi_create_function(env, "joinHits", NAPI_AUTO_LENGTH, tidepool::JoinHits, nullptr, &joinHits);
  exports.Set("joinHits", Napi::Value(env, joinHits));
  exports.Set("decodePostings", Napi::Function::New(env, tidepool::DecodePostings, "decodePostings"));
  exports.Set("intersectPostings", Napi::Function::New(env, tidepool::IntersectPostings, "intersectPostings"));
  exports.Set("unionPostings", Napi::Function::New(env, tidepool::UnionPostings, "unionPostings"));
  exports.Set("differencePostings", Napi::Function::New(env, tidepool::DifferencePostings, "differencePostings"));
  exports.Set("unionManyPostings", Napi::Function::New(env, tidepool::UnionManyPostings, "unionManyPostings"));
  exports.Set("countInRange", Napi::Function::New(env, tidepool::CountInRange, "countInRange"));
  exports.Set("rangeOfIds", Napi::Function::New(env, tidepool::RangeOfIds, "rangeOfIds"));
  exports.Set("decodeDocBlock", Napi::Function::New(env, tidepool::DecodeDocBlock, "decodeDocBlock"));
  exports.Set("encodeDocBlock", Napi::Function::New(env, tidepool::EncodeDocBlock, "encodeDocBlock"));
  exports.Set("dictTokenTable", Napi::Function::New(env, tidepool::DictTokenTable, "dictTokenTable"));
  exports.Set("docIndexerNew", Napi::Function::New(env, tidepool::DocIndexerNew, "docIndexerNew"));
  exports.Set("docIndexerIndex", Napi::Function::New(env, tidepool::DocIndexerIndex, "docIndexerIndex"));
  exports.Set("docIndexerLearnField", Napi::Function::New(env, tidepool::DocIndexerLearnField, "docIndexerLearnField"));
  exports.Set("docIndexerLearnToken", Napi::Function::New(env, tidepool::DocIndexerLearnToken, "docIndexerLearnToken"));
  exports.Set("docIndexerFind", Napi::Function::New(env, tidepool::DocIndexerFind, "docIndexerFind"));
  exports.Set("docIndexerFieldTokens", Napi::Function::New(env, tidepool::DocIndexerFieldTokens, "docIndexerFieldTokens"));
  exports.Set("docIndexerSortedField", Napi::Function::New(env, tidepool::DocIndexerSortedField, "docIndexerSortedField"));
  exports.Set("docIndexerRelease", Napi::Function::New(env, tidepool::DocIndexerRelease, "docIndexerRelease"));
  exports.Set("docIndexerBytes", Napi::Function::New(env, tidepool::DocIndexerBytes, "docIndexerBytes"));
  tidepool::InitRelay(env, exports);
  tidepool::InitFdPassing(env, exports);
  return exports;
}

NODE_API_MODULE(tidepool_native, Init)
