# Writes OUT, a C++ file that holds every file under DIST (the built web dashboard) as a
# byte array, and defines gpunex::platform::web::EmbeddedFiles() over them. A missing or
# empty DIST gives an empty list: gpunexd then serves a page that says how to build the
# dashboard. Run at build time: cmake -DDIST=... -DOUT=... -P embed_files.cmake
cmake_minimum_required(VERSION 3.25)
if(NOT DEFINED DIST OR NOT DEFINED OUT)
  message(FATAL_ERROR "usage: cmake -DDIST=<web/dist> -DOUT=<file.cc> -P embed_files.cmake")
endif()

set(files "")
if(IS_DIRECTORY "${DIST}")
  file(GLOB_RECURSE files LIST_DIRECTORIES false RELATIVE "${DIST}" "${DIST}/*")
  list(SORT files)
endif()

set(arrays "")
set(entries "")
set(index 0)
foreach(rel IN LISTS files)
  # URL paths go into C++ string literals: only plain file names are served.
  if(NOT rel MATCHES "^[A-Za-z0-9._/@+~-]+$")
    message(WARNING "web dashboard: not embedding ${rel} (unusual characters in its name)")
    continue()
  endif()
  file(SIZE "${DIST}/${rel}" size)
  if(size EQUAL 0)
    string(APPEND entries "    {\"/${rel}\", std::string_view()},\n")
    continue()
  endif()
  file(READ "${DIST}/${rel}" hex HEX)
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
  # 16 bytes a line (CMake regular expressions have no {n}).
  string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)"
         "\\1\n" bytes "${bytes}")
  string(APPEND arrays "// /${rel}\nconst unsigned char kFile${index}[] = {\n${bytes}};\n\n")
  string(APPEND entries
         "    {\"/${rel}\", std::string_view(reinterpret_cast<const char*>(kFile${index}), ${size})},\n")
  math(EXPR index "${index} + 1")
endforeach()

set(out "// Generated at build time from ${DIST} by src/platform/web/embed_files.cmake.\n")
string(APPEND out "// Do not edit.\n#include \"platform/web/static_site.h\"\n\n")
string(APPEND out "namespace gpunex::platform::web {\n")
if(entries STREQUAL "")
  string(APPEND out "\nstd::span<const EmbeddedFile> EmbeddedFiles() { return {}; }\n")
else()
  string(APPEND out "namespace {\n\n${arrays}const EmbeddedFile kFiles[] = {\n${entries}};\n\n")
  string(APPEND out "}  // namespace\n\nstd::span<const EmbeddedFile> EmbeddedFiles() { return kFiles; }\n")
endif()
string(APPEND out "\n}  // namespace gpunex::platform::web\n")
file(WRITE "${OUT}" "${out}")
