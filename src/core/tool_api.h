/* tool_api.h — marks the internal functions that the weft tool (bench,
 * check, stress, tree, run) calls.  libweft.so exports them beside weft.h's
 * API so that the tool links the very library users link (and times it)
 * rather than a second copy; they are not an API: weft.h is.  The library
 * binds its own calls to them locally (-Bsymbolic-functions), so a program
 * that defines a function of the same name changes nothing inside weft. */
#ifndef WEFT_TOOL_API_H
#define WEFT_TOOL_API_H
#define WEFT_TOOL_API __attribute__((visibility("default")))
#endif
