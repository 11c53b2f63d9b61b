// SseParser: splits a server-sent-event byte stream (already de-chunked) into events.
//
// Contract: bytes may arrive in pieces of any size; an event is complete at a blank line, and
// its `data:` lines are joined with '\n' (the SSE rule). Comment lines (":...") and other fields
// are ignored. CR LF and LF line ends are both accepted.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace dss::bench {

class SseParser {
 public:
  // Appends `bytes`; returns the data of the events completed by them, in order.
  std::vector<std::string> feed(std::string_view bytes);

 private:
  std::string line_;  // the unfinished line
  std::string data_;  // data of the event being read
  bool has_data_ = false;
};

}  // namespace dss::bench
