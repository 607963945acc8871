// Twin of src/pooler/query-stats/fingerprint.ts: the fingerprint of a simple-protocol Query text (literals replaced
// by ?, comments dropped, whitespace runs collapsed; FNV-1a 64 over the normalized bytes), in one pass that reads may
// cut anywhere.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace tidepool {
namespace relay {

/** Normalizes a query text fed in pieces. Rules (README "Top queries"): numeric literals, '...' strings (with ''),
 *  E'...' (with backslash escapes), B'', X'', N'' and $tag$...$tag$ strings become ?; -- and nested block comments
 *  count as whitespace; whitespace runs become one space, none at either end; "quoted identifiers", $1 parameters,
 *  words (t1, int4) and everything else stay as they are. The text ends at its NUL; the kept text is cut at kTextMax
 *  bytes (on a UTF-8 character boundary), the hash covers all of it. */
struct QueryFingerprint {
  static constexpr size_t kTextMax = 2048;
  static constexpr size_t kTagMax = 64;
  static constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ULL;
  static constexpr uint64_t kFnvPrime = 0x100000001b3ULL;
  enum Mode : uint8_t {
    kNormal, kWord, kNumber, kSquote, kSquoteEnd, kEstring, kEstringEsc, kEstringEnd, kDquote,
    kDollarStart, kDollarTag, kDollarBody, kLineComment, kBlockComment, kDone
  };
  uint64_t hash = kFnvOffset;
  uint64_t emitted = 0;
  std::string text;
  Mode mode = kNormal;
  uint8_t held = 0;    // '-', '/', '.' or a string-prefix letter whose meaning the next byte decides
  bool space = false;  // whitespace (or a comment) since the last byte emitted
  bool numHex = false;
  uint8_t numFirst = 0, numPrev = 0;
  uint32_t numLen = 0;
  uint8_t tag[kTagMax];
  uint8_t tagLen = 0;
  uint8_t match = 0;   // bytes of the closing $tag$ matched
  uint8_t cprev = 0;
  uint32_t depth = 0;

  void Start() {
    hash = kFnvOffset;
    emitted = 0;
    if (text.capacity() < kTextMax) text.reserve(kTextMax);
    text.clear();
    mode = kNormal;
    held = 0;
    space = false;
  }

  static bool Digit(uint8_t c) { return c >= '0' && c <= '9'; }
  static bool Letter(uint8_t c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
  static bool WordStart(uint8_t c) { return Letter(c) || c == '_' || c >= 0x80; }
  static bool WordByte(uint8_t c) { return WordStart(c) || Digit(c) || c == '$'; }
  static bool TagByte(uint8_t c) { return WordStart(c) || Digit(c); }
  static bool Space(uint8_t c) { return c == ' ' || (c >= 0x09 && c <= 0x0d); }
  static bool Prefix(uint8_t c) {
    c |= 0x20;
    return c == 'e' || c == 'b' || c == 'x' || c == 'n';
  }

  void Put(uint8_t b) {
    hash = (hash ^ b) * kFnvPrime;
    emitted++;
    if (text.size() < kTextMax) text.push_back(static_cast<char>(b));
  }
  void Emit(uint8_t b) {
    if (space) {
      space = false;
      if (emitted > 0) Put(' ');
    }
    Put(b);
  }
  void EmitTag() {
    for (uint8_t i = 0; i < tagLen; i++) Emit(tag[i]);
  }

  /** A held byte meets the next: true when that byte is consumed. */
  bool Resolve(uint8_t c) {
    const uint8_t h = held;
    held = 0;
    if (h == '-') {
      if (c == '-') {
        mode = kLineComment;
        return true;
      }
      Emit('-');
      return false;
    }
    if (h == '/') {
      if (c == '*') {
        mode = kBlockComment;
        depth = 1;
        cprev = 0;
        return true;
      }
      Emit('/');
      return false;
    }
    if (h == '.') {
      if (Digit(c)) {
        Emit('?');
        mode = kNumber;
        numHex = false;
        numFirst = '.';
        numPrev = c;
        numLen = 2;
        return true;
      }
      Emit('.');
      return false;
    }
    if (c == '\'') {
      Emit('?');
      mode = (h | 0x20) == 'e' ? kEstring : kSquote;
      return true;
    }
    Emit(h);
    mode = kWord;
    return false;
  }

  void Byte(uint8_t c) {
    if (mode == kDone) return;
    if (c == 0) {
      End();
      return;
    }
    for (;;) {
      switch (mode) {
        case kNormal:
          if (held) {
            if (Resolve(c)) return;
            continue;
          }
          if (Space(c)) {
            space = true;
          } else if (c == '-' || c == '/' || c == '.') {
            held = c;
          } else if (c == '\'') {
            Emit('?');
            mode = kSquote;
          } else if (c == '"') {
            Emit('"');
            mode = kDquote;
          } else if (c == '$') {
            mode = kDollarStart;
          } else if (Digit(c)) {
            Emit('?');
            mode = kNumber;
            numHex = false;
            numFirst = c;
            numPrev = c;
            numLen = 1;
          } else if (WordStart(c)) {
            if (Prefix(c)) {
              held = c;
            } else {
              Emit(c);
              mode = kWord;
            }
          } else {
            Emit(c);
          }
          return;
        case kWord:
          if (WordByte(c)) {
            Emit(c);
            return;
          }
          mode = kNormal;
          continue;
        case kNumber: {
          if (numLen == 1 && numFirst == '0' && (c == 'x' || c == 'X')) numHex = true;
          bool more = Digit(c) || Letter(c) || c == '_' || c == '.';
          if (!more && (c == '+' || c == '-') && (numPrev == 'e' || numPrev == 'E') && !numHex) more = true;
          if (more) {
            numPrev = c;
            numLen++;
            return;
          }
          mode = kNormal;
          continue;
        }
        case kSquote:
          if (c == '\'') mode = kSquoteEnd;
          return;
        case kSquoteEnd:
          if (c == '\'') {
            mode = kSquote;
            return;
          }
          mode = kNormal;
          continue;
        case kEstring:
          if (c == '\\') mode = kEstringEsc;
          else if (c == '\'') mode = kEstringEnd;
          return;
        case kEstringEsc:
          mode = kEstring;
          return;
        case kEstringEnd:
          if (c == '\'') {
            mode = kEstring;
            return;
          }
          mode = kNormal;
          continue;
        case kDquote:
          Emit(c);
          if (c == '"') mode = kNormal;
          return;
        case kDollarStart:
          if (Digit(c)) {
            Emit('$');
            Emit(c);
            mode = kWord;
            return;
          }
          if (c == '$') {
            Emit('?');
            tagLen = 0;
            match = 0;
            mode = kDollarBody;
            return;
          }
          if (WordStart(c)) {
            tag[0] = c;
            tagLen = 1;
            mode = kDollarTag;
            return;
          }
          Emit('$');
          mode = kNormal;
          continue;
        case kDollarTag:
          if (TagByte(c) && tagLen < kTagMax) {
            tag[tagLen++] = c;
            return;
          }
          if (c == '$') {
            Emit('?');
            match = 0;
            mode = kDollarBody;
            return;
          }
          // Not a dollar quote ($name without its closing $, or a tag past kTagMax): a word, as it was written.
          Emit('$');
          EmitTag();
          mode = kWord;
          continue;
        case kDollarBody: {
          const uint8_t want = match == 0 || match == tagLen + 1 ? '$' : tag[match - 1];
          if (c == want) {
            if (++match == tagLen + 2) mode = kNormal;
          } else {
            match = c == '$' ? 1 : 0;
          }
          return;
        }
        case kLineComment:
          if (c == '\n' || c == '\r') {
            mode = kNormal;
            space = true;
          }
          return;
        case kBlockComment:
          if (cprev == '*' && c == '/') {
            cprev = 0;
            if (--depth == 0) {
              mode = kNormal;
              space = true;
            }
          } else if (cprev == '/' && c == '*') {
            cprev = 0;
            depth++;
          } else {
            cprev = c;
          }
          return;
        case kDone:
          return;
      }
    }
  }

  void Feed(const uint8_t* buf, size_t len) {
    for (size_t i = 0; i < len && mode != kDone; i++) Byte(buf[i]);
  }

  /** The text ended (its NUL, or the message's end): what was held is written as it is. */
  void End() {
    if (held) {
      Emit(held);
      held = 0;
    }
    if (mode == kDollarStart) Emit('$');
    if (mode == kDollarTag) {
      Emit('$');
      EmitTag();
    }
    mode = kDone;
  }

  void Finish() {
    if (mode != kDone) End();
    if (emitted > text.size()) {
      // Cut at kTextMax: no partial UTF-8 character at the end.
      size_t k = text.size(), cont = 0;
      while (k > 0 && cont < 3 && (static_cast<uint8_t>(text[k - 1]) & 0xc0) == 0x80) {
        k--;
        cont++;
      }
      if (k > 0) {
        const uint8_t lead = static_cast<uint8_t>(text[k - 1]);
        const size_t need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
        if (need > 1 && need > cont + 1) text.resize(k - 1);
      }
    }
  }
};

}  // namespace relay
}  // namespace tidepool
