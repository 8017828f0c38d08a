/* hello_allreduce.c — the smallest weft program: every rank contributes its
 * rank + 1, everyone gets the sum.  Run: weft run -n 4 ./hello_allreduce */
#include <stdio.h>
#include <weft.h>

int main(int argc, char **argv)
{
    if (weft_init(&argc, &argv) != WEFT_OK) {
        fprintf(stderr, "weft_init: %s\n", weft_last_error());
        return 1;
    }
    weft_comm_t world = weft_comm_world();
    int rank = weft_comm_rank(world), size = weft_comm_size(world);
    int mine = rank + 1, sum = 0;
    if (weft_allreduce(&mine, &sum, 1, WEFT_INT32, WEFT_SUM, world) != WEFT_OK) {
        fprintf(stderr, "allreduce: %s\n", weft_last_error());
        return 1;
    }
    printf("rank %d of %d: sum %d (expected %d)\n", rank, size, sum, size * (size + 1) / 2);
    return weft_finalize() == WEFT_OK && sum == size * (size + 1) / 2 ? 0 : 1;
}
