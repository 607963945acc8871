// WTF-8: JavaScript strings (UTF-16, lone surrogates allowed) to bytes and back without loss, for the document
// indexer's dictionary (its keys are bytes; tokens the JavaScript path makes may hold a lone surrogate).
#pragma once
#include <cstdint>
#include <string>

namespace tidepool {

// UTF-8 of the code units, a surrogate pair as one code point, a lone surrogate as its own 3-byte sequence.
inline std::string Wtf8FromUtf16(const std::u16string& u) {
  std::string out;
  out.reserve(u.size());
  for (size_t i = 0; i < u.size(); i++) {
    uint32_t c = u[i];
    if (c >= 0xD800 && c <= 0xDBFF && i + 1 < u.size() && u[i + 1] >= 0xDC00 && u[i + 1] <= 0xDFFF) {
      c = 0x10000 + ((c - 0xD800) << 10) + (u[i + 1] - 0xDC00);
      i++;
    }
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else if (c < 0x800) {
      out += static_cast<char>(0xC0 | (c >> 6));
      out += static_cast<char>(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
      out += static_cast<char>(0xE0 | (c >> 12));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (c & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (c >> 18));
      out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (c & 0x3F));
    }
  }
  return out;
}

// Appends the UTF-16 code units of WTF-8 bytes (as Wtf8FromUtf16 writes them) to `out`; returns how many.
inline uint32_t AppendUtf16(std::u16string* out, const char* p, uint32_t n) {
  const size_t before = out->size();
  for (uint32_t i = 0; i < n;) {
    const uint8_t b = static_cast<uint8_t>(p[i]);
    const uint32_t len = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
    uint32_t c;
    if (i + len > n) {  // cut short (not written by Wtf8FromUtf16): one replacement character
      c = 0xFFFD;
      i = n;
    } else if (b < 0x80) {
      c = b;
      i += 1;
    } else if (b < 0xE0) {
      c = ((b & 0x1Fu) << 6) | (static_cast<uint8_t>(p[i + 1]) & 0x3Fu);
      i += 2;
    } else if (b < 0xF0) {
      c = ((b & 0x0Fu) << 12) | ((static_cast<uint8_t>(p[i + 1]) & 0x3Fu) << 6) | (static_cast<uint8_t>(p[i + 2]) & 0x3Fu);
      i += 3;
    } else {
      c = ((b & 0x07u) << 18) | ((static_cast<uint8_t>(p[i + 1]) & 0x3Fu) << 12) |
          ((static_cast<uint8_t>(p[i + 2]) & 0x3Fu) << 6) | (static_cast<uint8_t>(p[i + 3]) & 0x3Fu);
      i += 4;
    }
    if (c >= 0x10000) {
      out->push_back(static_cast<char16_t>(0xD800 + ((c - 0x10000) >> 10)));
      out->push_back(static_cast<char16_t>(0xDC00 + ((c - 0x10000) & 0x3FF)));
    } else {
      out->push_back(static_cast<char16_t>(c));
    }
  }
  return static_cast<uint32_t>(out->size() - before);
}

}  // namespace tidepool
