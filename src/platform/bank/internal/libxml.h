// libxml2 for the bank folder: initialised once per process, and silent. libxml2 prints
// its errors to stderr unless told otherwise; an XmlErrors in scope collects them
// instead, for this thread (libxml2 keeps its error handlers per thread).
//
// Thread-safety: InitLibxml may be called from any thread, any number of times. An
// XmlErrors belongs to the thread that made it.
#pragma once

#include <libxml/xmlerror.h>
#include <libxml/xmlversion.h>

#include <string>
#include <string_view>
#include <vector>

namespace gpunex::platform::bank::internal {

// Calls xmlInitParser the first time (done once already when the program loads).
void InitLibxml();

#if LIBXML_VERSION >= 21200
using XmlErrorArg = const xmlError*;
#else
using XmlErrorArg = xmlError*;
#endif

// While in scope, this thread's libxml2 errors and warnings go to messages(), not stderr;
// the handlers in place before are restored at the end of the scope. The schema parser
// and validation contexts are pointed at it too (Structured).
class XmlErrors {
 public:
  XmlErrors();
  ~XmlErrors();
  XmlErrors(const XmlErrors&) = delete;
  XmlErrors& operator=(const XmlErrors&) = delete;

  // The handler to give a libxml2 context with `this` as its user data.
  static void Structured(void* self, XmlErrorArg error);

  // The collected messages, "line 12: ..." when the error has a line, one per entry.
  const std::vector<std::string>& messages() const { return messages_; }
  // At most `max` of them joined with "; " (and how many more there were), or
  // `fallback` when there are none.
  std::string Summary(std::string_view fallback, size_t max = 10) const;

 private:
  static void Generic(void* self, const char* format, ...);
  void Add(std::string message);

  std::vector<std::string> messages_;
  xmlStructuredErrorFunc previous_structured_;
  void* previous_structured_context_;
  xmlGenericErrorFunc previous_generic_;
  void* previous_generic_context_;
};

// The pain.001.001.09 XML schema (pain.001.001.09.xsd), compiled in at build time.
std::string_view Pain001Xsd();

}  // namespace gpunex::platform::bank::internal
