/* tool.h — shared pieces of the weft command-line tool. */
#ifndef WEFT_TOOL_H
#define WEFT_TOOL_H

#include <stdbool.h>

int cmd_check(int argc, char **argv);
int cmd_algorithms(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_tree(int argc, char **argv);
int cmd_dissem_tuple(int argc, char **argv);
/* Is name one of the comma-separated items of list? */
bool name_in_list(const char *list, const char *name);

#endif
