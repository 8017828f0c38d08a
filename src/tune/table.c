/* table.c — AUTO's tuning tables (table.h): the text format's parser, the
 * lookup, and the built-in table for a small shared-memory machine.  The
 * built-in rows are the thresholds measured with `weft bench` on 2-8 ranks
 * of this project's 2-core test machine (docs/PERFORMANCE-LOG.md): e.g. the
 * pipelined two-tree reduce and bcast from 256 KiB (reduce of 1 MiB at
 * P = 2, 4, 8: 92, 403, 626 us against rsg's 130, 602, 967); at 4-8 ranks
 * (oversubscribed here) the linear bcast to 32 KiB (P = 8, 8 B: 7-13 us
 * against binomial's 20-23) and twotree above it (P = 4, 64 KiB-512 KiB:
 * 14-17, 19-27, 34-42, 56-67 us against linear's 18, 27-29, 48-50, 97-119;
 * P = 8: a tie at 64 KiB, 0.6-0.9x linear's time above; three runs under
 * each launcher), the linear reduce (P = 8, 8 B: 5.3 us against 31) to
 * 256 KiB at P = 4-8 (P = 8, 32-256 KiB: 14-26,
 * 21-36, 47-56, 73-93 us against binomial's 33-41, 39-41, 50-62, 89-99;
 * P = 6: a tie from 64 KiB; P = 4, two runs: 64 KiB 5.6-14.4 against
 * 10.7-23.9, 256 KiB 22-38 against 30-58) and reduce + bcast, both linear, for allreduce to 16 KiB
 * (P = 8, 16 KiB: 25 us against recursive doubling's 41), and at 5-8 ranks
 * on to 128 KiB for commutative ops (two runs each at P = 5, 6, 8, against
 * rabenseifner: P = 8, 16 KiB 30-35 us against 47; 64 KiB 57-58 against
 * 70-72; 128 KiB 93-94 against 101-104; P = 5, 64 KiB 29-30 against
 * 43-44; from 256 KiB a tie, at P = 4 rabenseifner ahead from 16 KiB,
 * and on a second Intel VM (2026-12-03, three runs under each launcher:
 * 16 KiB 8.2-9.3 us against 10.6-11.7; 12 KiB a tie; 8 KiB the linear
 * pair's in two of three runs under mpirun)): one
 * wait per rank instead of one per tree level, each a sleep and a wake-up when
 * ranks outnumber cores.  The board (no messages: each rank writes its
 * slot and reads the others') for allreduce, bcast and reduce of up to
 * 2 KiB at 3-8 ranks, where ranks outnumber cores: 2-4x faster than the
 * tree or linear choice for allreduce (P = 8, 8 B: 10.8-11 us against
 * 20-23; 512 B-2 KiB: 10.3-13.9 against 19.6-25.9; P = 16, 8 B: 26-34
 * against 98-116), 0.89-0.96x linear's time for bcast and reduce at P = 8
 * (median of three runs, 168 B-2 KiB); at 2 ranks for bcast and reduce
 * to 2 KiB (bcast 0.23-0.40 us against binomial's 0.27-0.59, reduce
 * 0.23-0.52 against 0.24-0.64) and for allreduce to 1536 B (0.17-0.25
 * against recursive doubling's 0.24-0.30 to 168 B; since a reader fetches
 * the counts it adds early, 22 of 25 cells of five runs in the slow phase,
 * 192 B-1536 B: 384 B 0.29-0.80 against 0.78-0.94, 1 KiB 0.43-0.53
 * against 0.84-1.04, 1536 B 0.81-1.15 against 1.02-1.28; at 2 KiB
 * recursive doubling was ahead on the AMD VM: 1.01-1.12 against
 * 1.29-1.42, and 0.52 against 0.62 in the fast phase; on the Intel VM,
 * where posts are demoted to the shared cache (board.c), the board is
 * ahead to 2088 bytes: 1536-2088 B 0.59-0.81 against 1.16-1.32 under
 * weft run, 0.71-0.91 against 1.09-1.34 under mpirun, three runs each;
 * and since its slots carry 8 KiB in jobs of up to 4 ranks (segment.h),
 * on to 8 KiB (2026-12-01, three runs
 * under each launcher, the median of the six medians: 4 KiB 1.2 us
 * against recursive doubling's 1.6 and Rabenseifner's 1.9, 8 KiB 2.2
 * against 2.5 and 2.7), so it serves the 2-rank allreduce to 8 KiB; the
 * 2-rank bcast and reduce tied with binomial at 4 KiB and lost at 8 KiB
 * (2.3-2.4 against 2.1-2.2), so they stay on it to 2 KiB); at 9-16
 * ranks, allreduce to 168 B,
 * and from 17 ranks to 2 KiB (weft run, P = 20, 32, 64, 512 B-2 KiB: 106-118,
 * 177-205, 518-645 us against linear reduce + bcast's 194-232, 383-402,
 * 951-1010 and recursive doubling's 388-399, 750-819, 2176-2412).
 * Bcast by linear_arena (the root's buffer staged in its shared arena,
 * read from there by every rank; over MPI the row's next choice) where it
 * won in two runs of weft run at P = 6, 8, 16 (medians, us): from 64 KiB
 * at 5-8 ranks (P = 8: 64 KiB 26.6-26.9 against twotree's 33.5-35.8;
 * 1 MiB 177-213 against 280-327; 16 MiB 5985-6141 against 8324-8587;
 * P = 6 alike; on the Intel VM a tie with linear at 6 ranks, ahead at 8:
 * 2 MiB 981 against 1241, 8 MiB 5204 against 6215) and from 32 KiB at 9
 * and more (P = 16: 64 KiB 41 against linear's 94 and binomial's 132;
 * 16 MiB 10.7-11.0 ms against twotree's 17.5-17.8).  At 3 and 4 ranks
 * the plain linear bcast (every receiver reading the root's own buffer by
 * single copy, no stage), from 2 KiB at 3 ranks and 32 KiB at 4: on the
 * Intel VM (2026-12-01, three runs under each launcher, the median of the
 * six medians, us) it was ahead of binomial, bintree, twotree and
 * linear_arena from 128 KiB to 16 MiB (P = 3: 128 KiB 14.7 against
 * bintree's 20.1 and twotree's 25.3, 512 KiB 47.5 against binomial's
 * 77.3 and twotree's 94.0, 2 MiB 309 against 387 and linear_arena's 472,
 * 8 MiB 1323 against 1898 and 1916; P = 4: 256 KiB 41.5 against
 * bintree's 44.9 and linear_arena's 70.6, 1 MiB 222 against 259 and 297,
 * 4 MiB 1044 against twotree's 1108 and 1342, 16 MiB 4907 against 6119
 * and 6186) and tied below (2-32 KiB at 3 ranks with binomial, 64 KiB at
 * 4 with bintree); on the AMD VM twotree and the arena had led there.
 * At 3 ranks (two cores for three), from 2 KiB to 1 MiB (two runs at each
 * size, one or both in the machine's slow phase; medians in us): recursive
 * doubling to 16 KiB (16.0-16.1 against rabenseifner's 24.8-24.9),
 * rabenseifner to 128 KiB (64 KiB: 46.3-46.5 against ring's 61-62), the
 * ring above (256 KiB 202-205 against 306-326, 1 MiB 765-793 against
 * 1269-1285); on the Intel VM rabenseifner on to 512 KiB (2026-12-01,
 * three runs under each launcher, the median of the six medians: 128 KiB
 * 43.7 against the ring's 50.6, 256 KiB 90.8 against 112, 512 KiB 194
 * against 253; 1 MiB 635 against 557).  Past 512 KiB, though, Rabenseifner
 * in 512 KiB segments, which no sweep had tried there, led the ring (made
 * a pass shorter that session) in each of six runs at 1 MiB (2026-12-01,
 * later still; three under each launcher, us: 369-453 against 476-563;
 * unsegmented 531-701), so the segments take over from 512 KiB.
 * At 9-16 ranks, from 169 B to 8 KiB, a linear reduce and a linear bcast
 * (P = 16, two to four runs, most in the slow phase: 512 B 55-62
 * against recursive doubling's 98-107, 2 KiB 69-79 against 104-114, 8 KiB
 * 115-121 against 173-181, 4 KiB 59-95 against rabenseifner's 135-171; at
 * 16 KiB a tie).
 * At 9-64 ranks on the 2 cores the flat algorithms take over from the
 * trees where a rank's turn on a core costs more than its bytes (the AMD
 * VM, 2026-12-02: three runs under weft run and three under mpirun at P =
 * 12, 16 and 32, three of weft run at 9, two of weft run and one under
 * mpirun at 64; the range of the medians, us; PERFORMANCE-LOG.md, "Nine
 * ranks and more").  Bcast on the board to 2 KiB and linearly above
 * (linear_arena, which below 64 KiB is the linear bcast with no stage and
 * over MPI falls through to binomial): P = 16, 8 B 92-105 and 84-99
 * against binomial's 127-255, 8 KiB 80-109 against 192-213; P = 64, 8 KiB
 * 625-857 against 1695-2004.  Reduce on the board to 2 KiB and linear to
 * 128 KiB at 9-32 ranks (8 KiB at 33-64: at 64 ranks 128 KiB took the
 * linear reduce 25-30 ms against binomial's 4.9-5.7, its root's cells
 * full), then the stage to 256 KiB for commutative ops: P = 16, 8 B 71-97
 * against 204-268, 64 KiB 131-179 against 222-382, 128 KiB 170-218
 * against 245-302, 256 KiB (linear_arena) 568-765 against 766-820; P =
 * 32, 64 KiB 254-432 against 990-1177 under mpirun; P = 64, 8 KiB 566-651
 * against 1668-2192.  Allreduce by a linear reduce and bcast to 128 KiB at
 * 9-32 ranks (8 KiB at 33-64, for the same cliff: 256 KiB at 12-32 ranks,
 * 128 KiB at 64, took it 1.5-7x longer than the rows it would replace),
 * commutative (P = 16, 32 KiB 223-284 against rabenseifner's 469-592; P =
 * 32, 8 KiB 422-579 against 1230-1519, 128 KiB 860-944 against
 * 1705-1898) and not (P = 32, 8 KiB 479-527 against recursive doubling's
 * 966-1063, 128 KiB 1435-1862 against 3037-3844), and the
 * non-commutative one by bst above (P = 16, 256 KiB 1645-1949 against
 * 2282-2707; P = 64, 128 KiB 9063-9975 against 12394-13245).  From 65
 * ranks nothing was measured and the trees stay.
 * Commutative allreduce above 1 MiB at 3-8 ranks:
 * rabenseifner in 512 KiB segments, 1.5-2x faster than what it replaces
 * (16 MiB, median of 4-8 runs: P = 3 7.4 ms against ring's 15.7, P = 6
 * 16.2 against 26.9; P = 4 7.5 against unsegmented rabenseifner's 13.9,
 * P = 8 18.9 against 34.7; at 2 MiB a tie with ring); at 2 ranks segments
 * made no difference on that machine, but on the Intel one of later
 * sessions 4 MiB segments above 4 MiB were 15-35 % faster (five runs,
 * medians, ms: 16 MiB 3.74 against 5.91, 32 MiB 10.7 against 13.0,
 * 64 MiB 22.3 against 26.1; 8 MiB 1.70 against 1.86), since a segment's
 * allgather then reads what its reduce-scatter just wrote while it is
 * still in the core's 2 MiB L2; at 4 ranks there 512 KiB stayed ahead
 * at first, but 4 MiB segments (a rank's block 1 MiB) led from 2 to 8
 * MiB in a later sweep (2026-12-01, two runs under each launcher, the
 * median of the four medians, ms: 2 MiB 1.01 against 1.15, 4 MiB 1.89
 * against 2.24, 8 MiB 3.90 against 4.54; 16-32 MiB a tie, 10.8 against
 * 11.5 and 25.9 against 26.9, the ring 10.3 and 30.6; 64 MiB 58.4
 * against 53.4), so they serve 4 ranks to 32 MiB.
 * Allreduce above 256 KiB at 5-16 ranks (for
 * non-commutative ops at 4-16): linear_arena (every rank's input staged
 * in its arena, each block reduced straight from the stages; two waits a
 * rank), measured side by side with the rows before, two runs at P = 5-8
 * and one at 12 and 16, all in the machine's slow phase (medians, us):
 * P = 8, 1 MiB 738-756 against rabenseifner's 903-953, 4 MiB 2856-3311
 * against segmented rabenseifner's 4000-6077, 64 MiB 53.5-60.0 ms against
 * 71.3-81.6; P = 5, 1 MiB 472-504 against 618-854, 16 MiB 8.9-9.1 ms
 * against 10.0-11.4; P = 6 and 7 alike; 384-768 KiB at P = 5 and 8 ahead
 * by 6-26 %; P = 16, 256 KiB 630 against 822, 4 MiB 6.4 ms against 13.8;
 * P = 12 alike; 256 KiB at 5-8 a tie.  At 5-8 ranks, commutative, that
 * no longer holds (the AMD VM, 2026-11-28, night, two runs of weft run at
 * P = 5, 6, 8 and two under mpirun at 8, medians, us): rabenseifner in
 * 512 KiB segments took P = 5, 512 KiB 116-128 against linear_arena's
 * 159-169, 1 MiB 202-261 against 317-324, 16 MiB 6.3-6.7 ms against
 * 9.5-9.8; P = 6, 16 MiB 6.9-8.4 ms against 10.7-10.8; P = 8 under
 * mpirun, 512 KiB 183-193 against 262-344, 16 MiB 10.1-11.0 ms against
 * 14.6-15.2, and 1-4 MiB a tie either way; so it takes those rows (at
 * P = 12, one run: 16 MiB 17.8 ms against 23.1, 1 MiB a tie; not
 * changed).  On the Intel VM (2026-12-01, two runs under each launcher,
 * the median of the four medians, ms) the stages led again from 2 MiB:
 * P = 8, 4 MiB 4.36 against 4.89, 16 MiB 25.2 against 26.5, 64 MiB 79.7
 * against 107; P = 6, 4 MiB 3.13 against 4.10, 64 MiB 68.8 against 77.5
 * (16 MiB a tie); P = 5, 2 MiB 1.40 against 1.61, 32 MiB 31.0 against
 * 37.8 (8 MiB a tie); 1 MiB a tie at 8 ranks; so they take 5-8 ranks
 * from 2 MiB again.  With the stage copied by plain stores (stage=plain,
 * 2026-12-03, two runs under mpirun, medians, us; PERFORMANCE-LOG.md, "The
 * stage copied plainly, by the table") they lead from 512 KiB to 4 MiB:
 * P = 8, 1 MiB 889-925 against streamed 1110-1120 and the segments'
 * 967-1155, 2 MiB 1751-1772 against 2255-2265 and 2102-2267; P = 5, 2 MiB
 * 1240-1248 against 1606-1666 and 1319-1838; P = 12, 1 MiB 1327-1374
 * against 1824-2083 streamed; at 8 MiB a tie, at 16 MiB streamed ahead
 * (P = 8: 22.1-23.3 ms against 25.6-26.3).  So does the bcast's stage
 * at 5-16 ranks (P = 8, 1 MiB 332-338 against 420-423; P = 5, 16 MiB
 * 4.9-5.7 ms against 6.0-6.6; P = 12, 1 MiB 506 against 594-606).
 * The bcast's stage in pieces (segment=BYTES, each sent as soon as it is
 * copied; the third Intel VM, 2026-12-03, three runs under mpirun and
 * three under weft run, the median of each launcher's three, us;
 * PERFORMANCE-LOG.md, "The bcast's stage in pieces"): P = 4, 1 MiB 181 and
 * 176 in 256 KiB pieces against linear's 252 and 212, 8 MiB 1439 and
 * 1442 against 2362 and 2256 (1 MiB pieces 1448 and 1458; two runs under
 * mpirun, 16 MiB 2761-2930 against 3677-5517, 64 MiB 16.1-16.2 ms against
 * 26.0-26.7); P = 5, 2 MiB 514 and 509-583 against the whole stage's 606
 * and 618, 8 MiB 2128 and 2141 against 2836 and 2153; P = 8, 2 MiB 689
 * and 666 against 750 and 759, 8 MiB 2864 and 2808 against 3579 and 3575
 * (16 MiB 5.97-6.11 ms against 7.65-8.25 under mpirun); P = 12, 2 MiB
 * 1095 and 1160 against 1155 and 1375, 8 MiB 4387 and 4320 against 5250
 * and 5112.  At 256 KiB a tie (P = 4: 32-37 against 31-32), and at 12
 * ranks the whole stage held 1 MiB (481 against 555-607 under weft run),
 * so the pieces start above 256 KiB at 4-8 ranks and above 1 MiB at 9-16.
 * The allreduce's input staged block by block as each is sent (stage=sent;
 * the same VM, later; two runs under each launcher, the range of the
 * medians, mpirun's first, us; PERFORMANCE-LOG.md, "The input staged as it
 * is sent"), against stage=plain: P = 5, 512 KiB 270-275 and 258-264
 * against 286-296 and 277-282, 2 MiB 1126-1209 and 1073-1088 against
 * 1124-1323 and 1150-1166; P = 8, 2 MiB 1581-1779 and 1523-1524 against
 * 1727-1898 and 1545-1632, 4 MiB 4819-5356 and 4626-5003 against
 * 5476-6537 and 4698-4986; P = 12, 1 MiB 1218-1281 against 1295-1432; and
 * against the Rabenseifner rows from 128 KiB at 5-8 ranks (three runs:
 * P = 5, 256 KiB 113-122 and 112-114 against 122-166 and 125-145; P = 8,
 * 512 KiB 408-433 and 380-396 against the 512 KiB segments' 461-532 and
 * 491-638).  At 16 MiB the whole input streamed held (P = 8: 23.4-24.1 ms
 * against 24.5-25.5).  Non-commutative, against the whole input streamed:
 * P = 4, 2 MiB 1072-1147 against 1440-1493; P = 12, 2 MiB 4789-5240
 * against 5780-6206; 8 MiB a tie at 8-12 ranks and ahead at 4 (6005-7536
 * against 7613-8774 over both launchers).  At 4 ranks (three runs under
 * each launcher, the median of each launcher's three, us) it led
 * Rabenseifner from 128 KiB to 2 MiB: 128 KiB 36 and 46 against 40 and 54,
 * 1 MiB 347 and 349 against 345 and 403, 2 MiB 709 and 696 against the 4
 * MiB segments' 798 and 798; at 4 MiB the segments led (1413-1450 against
 * 1547-1681 under mpirun, two runs).  At 6 and 8 ranks, 8 MiB (three runs
 * under each launcher, medians as above): 6540 and 6933 against the whole
 * input streamed's 8071 and 7374 at 6 ranks (the ring 7107 and 6259), 10582
 * and 11038 against 10737 and 11170 at 8; so 5-8 ranks keep it to 8 MiB.
 * Non-commutative (weft bench --op noncommutative): P = 4, 1 MiB 567
 * against bst's 929; P = 8, 256 KiB 375 against 456, 4 MiB 5.6 ms against
 * 11.6; P = 12, 1 MiB 1.8 ms against recursive doubling's 6.0.  At 3-4
 * ranks it ties or loses (the stage copy and the reads of lines the other
 * core just wrote).  Non-commutative allreduce from 16 KiB at 4-8 ranks:
 * bst, 1.5-2x faster than recursive doubling (weft bench --op
 * noncommutative, P = 8, 64 KiB: 114 us against 219; 4 MiB: 10.5-13.8 ms
 * against 19.3-21.8; P = 4, 256 KiB: 108 against 188).  Barrier from 2
 * ranks: the board (one wait per rank), 2x faster than dissemination at
 * 3-8 ranks and 2.5-4x at 16-32 on the 2 cores (P = 8: 7.7-9.8 us against
 * 16-17; P = 32: 52 against 176-220), and ahead at P = 2 too (0.17-0.20 us
 * against 0.23-0.24).  Allgather of blocks up to 2 KiB at 2-3 ranks: the
 * board (2026-11-30, MPI_Allgather of ints under the drop-in, the median's
 * maximum over ranks, two runs each): 2 ranks bound to cores 0.32 us at 4-8
 * bytes a rank against recursive doubling's 0.54-0.86 (Open MPI's 0.46-0.59),
 * 0.70-0.72 against 0.89-0.90 at 512, a tie at 64 and 2048; 3 ranks on the 2
 * cores 10.9-12.7 against Bruck's 11.6-14.0 (4-8 ranks: below).  Reduce-scatter
 * of a commutative op the same way (MPI_Reduce_scatter_block of ints,
 * sum), with the next slot's lines prefetched (board.c): at 2 ranks 0.28-0.31
 * us at 4-8 bytes a block against recursive halving's 0.62-0.72 (Open
 * MPI's 0.49-0.61), 0.44-0.46 against 0.68-0.92 at 64-512, 0.67-0.68
 * against 0.92-0.95 at 1024; at 3 ranks on the 2 cores 10.8-11.3 against
 * 11.5-12.3 to 768 bytes.  At 4-8 ranks on the 2 cores it lost on the
 * first Intel VM (23 us against 13 at 4 ranks, 4-2048 bytes) and won on a
 * later one (260 MiB of L3, 2026-12-07, three runs, us): the allgather of
 * 4-2048 byte blocks 2.9-4.9 against recursive doubling's 5.1-6.9 at 4
 * ranks, 4.8-7.3 against Bruck's 9.8-15.0 at 6, 7.0-14.1 against 18.9-40.5
 * at 8; the reduce-scatter of 16 bytes-8 KiB in all 2.9-6.6 against
 * recursive halving's 5.4-8.8 at 4 ranks, 24 bytes-1.5 KiB 4.8-6.6
 * against 11.6-12.6 at 6, 32-512 bytes 7.0-12.7 against 18.4-19.0 at 8.
 * So it serves both at 4-8 ranks, as far as these runs went.  The 2-rank
 * allgather then: 0.32 at 4-8 bytes a block, 0.43-0.82 at 64-1024 against
 * recursive doubling's 0.68-1.20 and Open MPI's 0.46-1.21, 0.74-0.76
 * against 1.37-1.47 at 2048.  Calls of
 * no elements take the board at every rank count: it posts and reads
 * nothing for them (board.c, empty_call), 0.9-1.2 us at 8 ranks on the 2
 * cores where recursive doubling's allgather took 28 and recursive
 * halving's reduce-scatter 85.  The table is measured on shared
 * memory; over MPI between nodes, measure with `weft tune` and load the
 * result.  `weft tune` measures another machine and writes rows that go
 * before them. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/core.h"
#include "table.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

static const char builtin_text[] =
    "weft-tuning 1\n"
    "# collective     ops             ranks       bytes         algorithms (first usable)\n"
    "allreduce        any             2-2         0-8K          board|recursive_doubling\n"
    "allreduce        any             3-3         0-2K          board|recursive_doubling\n"
    "allreduce        any             4-8         0-2K          "
    "board|reduce_bcast/reduce=linear;bcast=linear\n"
    "allreduce        any             9-16        0-168         board|recursive_doubling\n"
    "allreduce        any             17-*        0-2K          board|recursive_doubling\n"
    "allreduce        any             9-16        169-8K        "
    "reduce_bcast/reduce=linear;bcast=linear\n"
    "allreduce        any             4-4         2049-14K      "
    "reduce_bcast/reduce=linear;bcast=linear\n"
    "allreduce        any             5-8         2049-16K      "
    "reduce_bcast/reduce=linear;bcast=linear\n"
    "allreduce        noncommutative  4-4         14337-16K     "
    "reduce_bcast/reduce=linear;bcast=linear\n"
    "allreduce        noncommutative  1-1         *             recursive_doubling\n"
    "allreduce        noncommutative  2-2         8193-*        recursive_doubling\n"
    "allreduce        noncommutative  3-3         2049-*        recursive_doubling\n"
    "allreduce        noncommutative  4-8         16385-256K    bst\n"
    "allreduce        noncommutative  4-8         262145-8M     linear_arena/stage=sent|bst\n"
    "allreduce        noncommutative  4-8         8388609-*     linear_arena|bst\n"
    "allreduce        noncommutative  9-16        8193-128K     "
    "reduce_bcast/reduce=linear;bcast=linear\n"
    "allreduce        noncommutative  9-16        131073-256K   bst|recursive_doubling\n"
    "allreduce        noncommutative  9-16        262145-4M     "
    "linear_arena/stage=sent|recursive_doubling\n"
    "allreduce        noncommutative  9-16        4194305-*     linear_arena|recursive_doubling\n"
    "allreduce        noncommutative  17-32       2049-128K     "
    "reduce_bcast/reduce=linear;bcast=linear\n"
    "allreduce        noncommutative  33-64       2049-8K       "
    "reduce_bcast/reduce=linear;bcast=linear\n"
    "allreduce        noncommutative  33-64       8193-128K     bst|recursive_doubling\n"
    "allreduce        noncommutative  17-64       131073-256K   bst|recursive_doubling\n"
    "allreduce        noncommutative  17-64       262145-*      recursive_doubling\n"
    "allreduce        noncommutative  65-*        2049-*        recursive_doubling\n"
    "allreduce        commutative     1-1         0-2K          recursive_doubling\n"
    "allreduce        commutative     1-1         2049-1M       rabenseifner\n"
    "allreduce        commutative     2-2         8193-1M       rabenseifner\n"
    "allreduce        commutative     3-3         2049-16K      recursive_doubling\n"
    "allreduce        commutative     3-3         16385-512K    rabenseifner\n"
    "allreduce        commutative     3-3         524289-1M     rabenseifner/segment=512K\n"
    "allreduce        commutative     4-4         14337-128K    rabenseifner\n"
    "allreduce        commutative     4-4         131073-1M     linear_arena/stage=sent|rabenseifner\n"
    "allreduce        commutative     5-8         16385-128K    "
    "reduce_bcast/reduce=linear;bcast=linear\n"
    "allreduce        commutative     5-8         131073-256K   linear_arena/stage=sent|rabenseifner\n"
    "allreduce        commutative     5-8         262145-1M     "
    "linear_arena/stage=sent|rabenseifner/segment=512K\n"
    "allreduce        commutative     9-16        8193-128K     "
    "reduce_bcast/reduce=linear;bcast=linear\n"
    "allreduce        commutative     9-16        131073-256K   rabenseifner\n"
    "allreduce        commutative     9-16        262145-1M     "
    "linear_arena/stage=sent|rabenseifner\n"
    "allreduce        commutative     17-32       2049-128K     "
    "reduce_bcast/reduce=linear;bcast=linear\n"
    "allreduce        commutative     17-32       131073-1M     rabenseifner\n"
    "allreduce        commutative     33-64       2049-8K       "
    "reduce_bcast/reduce=linear;bcast=linear\n"
    "allreduce        commutative     33-64       8193-1M       rabenseifner\n"
    "allreduce        commutative     65-*        2049-1M       rabenseifner\n"
    "allreduce        commutative     1-2         1048577-4M    rabenseifner\n"
    "allreduce        commutative     1-2         4194305-*     rabenseifner/segment=4M\n"
    "allreduce        commutative     3-3         1048577-*     rabenseifner/segment=512K\n"
    "allreduce        commutative     4-4         1048577-2M    "
    "linear_arena/stage=sent|rabenseifner/segment=4M\n"
    "allreduce        commutative     4-4         2097153-32M   rabenseifner/segment=4M\n"
    "allreduce        commutative     4-4         33554433-*    rabenseifner/segment=512K\n"
    "allreduce        commutative     5-8         1048577-4M    "
    "linear_arena/stage=sent|rabenseifner/segment=512K\n"
    "allreduce        commutative     5-8         4194305-8M    "
    "linear_arena/stage=sent|rabenseifner/segment=512K\n"
    "allreduce        commutative     5-8         8388609-*     "
    "linear_arena|rabenseifner/segment=512K\n"
    "allreduce        commutative     9-16:pow2   1048577-4M    "
    "linear_arena/stage=sent|rabenseifner\n"
    "allreduce        commutative     9-16:notpow2 1048577-4M   linear_arena/stage=sent|ring\n"
    "allreduce        commutative     9-16:pow2   4194305-*     linear_arena|rabenseifner\n"
    "allreduce        commutative     9-16:notpow2 4194305-*    linear_arena|ring\n"
    "allreduce        commutative     17-*:pow2   1048577-*     rabenseifner\n"
    "allreduce        commutative     17-*:notpow2 1048577-*    ring\n"
    "bcast            any             1-1         *             binomial\n"
    "bcast            any             2-3         0-2K          board|binomial\n"
    "bcast            any             2-2         2049-*        binomial\n"
    "bcast            any             3-3         2049-*        linear\n"
    "bcast            any             4-8         0-2K          board|linear\n"
    "bcast            any             4-8         2049-32K      linear\n"
    "bcast            any             4-4         32769-256K    linear\n"
    "bcast            any             4-4         262145-4M     linear_arena/stage=plain;segment=256K|linear\n"
    "bcast            any             4-4         4194305-*     linear_arena/stage=plain;segment=1M|linear\n"
    "bcast            any             5-8         32769-256K    linear_arena/stage=plain|twotree\n"
    "bcast            any             5-8         262145-2M     linear_arena/stage=plain;segment=256K|twotree\n"
    "bcast            any             5-8         2097153-*     linear_arena/stage=plain;segment=1M|twotree\n"
    "bcast            any             9-64        0-2K          board|linear_arena|binomial\n"
    "bcast            any             9-64        2049-256K     linear_arena|binomial\n"
    "bcast            any             65-*        0-32K         binomial\n"
    "bcast            any             65-*        32769-256K    linear_arena|binomial\n"
    "bcast            any             9-16        262145-1M     linear_arena/stage=plain|twotree\n"
    "bcast            any             9-16        1048577-*     linear_arena/stage=plain;segment=1M|twotree\n"
    "bcast            any             17-*        262145-*      linear_arena|twotree\n"
    "reduce           any             2-3         0-2K          board|binomial\n"
    "reduce           any             4-8         0-2K          board|linear\n"
    "reduce           any             4-8         2049-256K     linear\n"
    "reduce           noncommutative  1-1         *             binomial\n"
    "reduce           noncommutative  2-3         2049-*        binomial\n"
    "reduce           noncommutative  4-8         262145-*      binomial\n"
    "reduce           any             9-64        0-2K          board|linear\n"
    "reduce           any             9-32        2049-128K     linear\n"
    "reduce           any             33-64       2049-8K       linear\n"
    "reduce           noncommutative  9-32        131073-*      binomial\n"
    "reduce           noncommutative  33-64       8193-*        binomial\n"
    "reduce           commutative     33-64       8193-128K     binomial\n"
    "reduce           noncommutative  65-*        *             binomial\n"
    "reduce           commutative     1-1         0-256K        binomial\n"
    "reduce           commutative     2-3         2049-256K     binomial\n"
    "reduce           commutative     9-64        131073-256K   linear_arena|binomial\n"
    "reduce           commutative     65-*        0-256K        binomial\n"
    "reduce           commutative     *           262145-*      twotree|rsg|binomial\n"
    "reduce_scatter   noncommutative  1-1         *             linear\n"
    "reduce_scatter   noncommutative  2-*         0-0           board|linear\n"
    "reduce_scatter   noncommutative  2-*         1-*           linear\n"
    "reduce_scatter   commutative     1-1         0-64K         recursive_halving\n"
    "reduce_scatter   commutative     1-1         65537-*       ring\n"
    "reduce_scatter   commutative     2-3         0-2K          board|recursive_halving\n"
    "reduce_scatter   commutative     2-2         2049-*        pairwise\n"
    "reduce_scatter   commutative     3-3         2049-6K       recursive_halving\n"
    "reduce_scatter   commutative     3-3         6145-3M       pairwise\n"
    "reduce_scatter   commutative     3-3         3145729-*     ring\n"
    "reduce_scatter   commutative     4-*         0-0           board|recursive_halving\n"
    "reduce_scatter   commutative     4-8         1-2K          board|recursive_halving\n"
    "reduce_scatter   commutative     4-8         2049-64K      recursive_halving\n"
    "reduce_scatter   commutative     9-*         1-64K         recursive_halving\n"
    "reduce_scatter   commutative     4-8         65537-1536K   ring\n"
    "reduce_scatter   commutative     4-8         1572865-*     pairwise\n"
    "reduce_scatter   commutative     9-*         65537-*       ring\n"
    "allgather        any             1-1         0-64K         recursive_doubling\n"
    "allgather        any             2-2         0-4K          board|recursive_doubling\n"
    "allgather        any             2-2         4097-64K      recursive_doubling\n"
    "allgather        any             3-3         0-6K          board|bruck\n"
    "allgather        any             3-3         6145-64K      bruck\n"
    "allgather        any             4-*         0-0           board|recursive_doubling\n"
    "allgather        any             4-8:pow2    1-8K          board|recursive_doubling\n"
    "allgather        any             4-8:notpow2 1-8K          board|bruck\n"
    "allgather        any             4-8:pow2    8193-64K      recursive_doubling\n"
    "allgather        any             4-8:notpow2 8193-64K      bruck\n"
    "allgather        any             9-*:pow2    1-64K         recursive_doubling\n"
    "allgather        any             9-*:notpow2 1-64K         bruck\n"
    "allgather        any             *           65537-*       ring\n"
    "scatter          any             *           *             binomial\n"
    "gather           any             *           *             binomial\n"
    "barrier          any             1-1         *             dissemination\n"
    "barrier          any             2-*         *             board|dissemination\n";

/* Rows that differ on the other kind of machine this table was measured on,
 * an AMD EPYC VM (2 cores; one 32 MiB L3 on the first, 2026-11-28 to
 * 12-02, family 26 with 508 MiB on the second, 2026-12-04), read before
 * the table above where the CPU is AMD's and every rank of the call is on
 * one machine (so the ranks, sharing the CPU, read the same rows);
 * WEFT_TUNING_CPU=amd or generic says which instead of the CPU.  Medians
 * of the medians of the runs, us; docs/PERFORMANCE-LOG.md has them all.
 *
 * From the first VM ("The AMD VM, 2026-12-02"; three or four runs under
 * mpirun and as many under weft run): the 2-rank allreduce by recursive
 * doubling above 6 KiB, where the Intel VM's board leads on to 8 KiB (8
 * KiB 1.5 against the board's 2.0; 6 KiB 1.3 against 1.4, 4 KiB 1.2
 * against 0.9); the 4-rank allreduce on the board to 8 KiB, which its
 * slots carry in a job of up to 4 ranks (3 KiB 7.3 against a linear reduce
 * + bcast's 10.1, 4 KiB 7.6 against 8.8, 8 KiB 9.8 against 12.0); the
 * 3-rank bcast from the arena's stage from 1 MiB (1 MiB 105 against
 * linear's 128, 16 MiB 2967 against 4784; the pipelined two-tree led it by
 * 5-15% to 4 MiB in the VM's usual phase but took 450-580 us at 1 MiB in
 * its slow one, where many handoffs between the cores pay for it); the
 * 4-rank bcast from the stage above 32 KiB (32 KiB a tie, 64 KiB 24.1
 * against linear's 32.2, 256 KiB 62.9 against 73.7); the 2-rank bcast to
 * 64 B and reduce to 1 KiB as one message through a ring cell (binomial)
 * rather than the board (bcast 8 B 0.18-0.23 against 0.21-0.26 us, reduce
 * 8 B 0.17-0.23 against 0.22-0.27): the board's reader also counts its
 * read on the poster's line, a second crossing, where a cell crosses once
 * with its payload; and at 9-16 ranks the rows the table had before its
 * stage=plain and stage=sent rows (unmeasured there since).
 *
 * From the second VM ("The AMD VM again, 2026-12-04"; two runs under
 * weft run and two under mpirun, alternating, at 4 and 8 ranks, two of
 * weft run at 5 and 6): the allreduce at 5-8 ranks, commutative or not,
 * takes the table's rows (the input staged as it is sent, stage=sent, 8
 * ranks 1 MiB 583 against the ring's 900 and 512 KiB segments' 898, 2 MiB
 * 1292 against 1776 and 2042; 5 and 6 ranks 1 MiB 383 and 373 against
 * 484-607), which the first VM's rows had hidden; at 4 ranks,
 * commutative, Rabenseifner to 1 MiB (512 KiB 125 against stage=sent's
 * 131), the input staged as sent above 1 MiB to 2 MiB (2 MiB 449 against
 * 512 KiB segments' 573) and 512 KiB segments above (4 MiB 1274 against
 * stage=sent's 1461 and 4 MiB segments' 2508, 16 MiB 6282 against 9289);
 * the bcast at 4-8 ranks from the stage in pieces above 256 KiB, streamed
 * rather than copied plainly (4 ranks: 256 KiB pieces 1 MiB 101 against
 * the whole stage's 118, 4 MiB 417 against 478; 1 MiB pieces from 8 MiB,
 * 64 MiB 9816 against 10254 and the whole stage's 13679; 8 ranks, where
 * 256 KiB pieces led or tied 1 MiB ones at every size: 1 MiB 236 against
 * 250, 8 MiB 1638 against 1916, 64 MiB 18919 against 23336).
 *
 * From the second VM a session later ("The direct allreduce on the AMD
 * VM", 2026-12-05; three runs under each launcher, alternating): the
 * direct allreduce (one round, one wait a rank) at 4 ranks from 14 KiB to
 * 48 KiB, commutative (16 KiB 20.1 us against Rabenseifner's 32.4 under
 * mpirun, 20.6 against 31.5 under weft run; 32 KiB 28.0 against 34.1 and
 * 27.2 against 44.7; 48 KiB 34.2 against 36.8 and 35.2 against 37.7; for
 * a non-commutative op bst stays ahead), and at 5-8 ranks from 2 KiB to 8
 * KiB, and for commutative ops on to 12 KiB, in place of a linear reduce
 * then bcast, which waits twice and where ranks outnumber cores lets the
 * root be the rank left without a core (weft run, 6 ranks, 4-8 KiB: 32-34
 * against 46; 8 ranks 54-64 against 81-87; under mpirun with weft's own
 * barrier before each call, as the drop-in's MPI_Barrier is, 8 ranks: 51
 * against 77 at 4 KiB, 70 against 76 at 12 KiB; with Open MPI's barrier
 * the two are within 20 % either way).  Above 12 KiB to 64 KiB at 5-8
 * ranks, commutative, the two-step allreduce led by the first rank to
 * arrive (pap_leader), which lets the rank that has a core lead where the
 * linear pair waits for rank 0 (four runs under each launcher in the VM's
 * slow phase, medians: 5 ranks, 32 KiB, 48 against 65 under mpirun, 56
 * against 59 under weft run; 8 ranks, 16 KiB, 79 against 112 and 80
 * against 99; 6-8 ranks at 48-64 KiB within 10 % either way in a few
 * cells; at 96 KiB neither led throughout).  And the reduce at 4-8 ranks
 * above 256 KiB to 512 KiB by binomial (8 ranks, 384 KiB: 198 against
 * the pipelined two-tree's 251 under mpirun, 194 against 225 under weft
 * run; 5 ranks, 512 KiB: 121 against 195 and 132 against 164), and at
 * 5-8 ranks above 512 KiB to 8 MiB, commutative, from the root's stage in
 * the arena (8 ranks, 2 MiB: 834 against 1114 and 780 against 970; 7
 * ranks, 4 MiB: 1369 against 1814 and 1429 against 1496), where the
 * two-tree's many handoffs between ranks sharing a core cost more than
 * its overlap saves; at 16 MiB the two tie or the tree leads. */
static const char amd_text[] =
    "weft-tuning 1\n"
    "# collective     ops             ranks       bytes         algorithms (first usable)\n"
    "allreduce        any             2-2         6145-8K       recursive_doubling\n"
    "allreduce        any             4-4         2049-8K       "
    "board|reduce_bcast/reduce=linear;bcast=linear\n"
    "allreduce        commutative     4-4         14337-48K     direct\n"
    "allreduce        any             5-8         2049-8K       direct\n"
    "allreduce        commutative     5-8         8193-12K      direct\n"
    "allreduce        commutative     5-8         12289-64K     "
    "pap_leader|reduce_bcast/reduce=linear;bcast=linear\n"
    "allreduce        commutative     4-4         131073-1M     rabenseifner\n"
    "allreduce        commutative     4-4         1048577-2M    "
    "linear_arena/stage=sent|rabenseifner/segment=512K\n"
    "allreduce        commutative     4-4         2097153-*     rabenseifner/segment=512K\n"
    "allreduce        noncommutative  9-16        262145-*      linear_arena|recursive_doubling\n"
    "allreduce        commutative     9-16        262145-1M     linear_arena|rabenseifner\n"
    "allreduce        commutative     9-16:pow2   1048577-4M    linear_arena|rabenseifner\n"
    "allreduce        commutative     9-16:notpow2 1048577-4M   linear_arena|ring\n"
    "bcast            any             2-2         0-64          binomial\n"
    "bcast            any             3-3         1M-*          linear_arena|linear\n"
    "bcast            any             4-4         32769-256K    linear_arena|linear\n"
    "bcast            any             4-4         262145-4M     linear_arena/segment=256K|linear\n"
    "bcast            any             4-4         4194305-*     linear_arena/segment=1M|linear\n"
    "bcast            any             5-8         32769-256K    linear_arena|twotree\n"
    "bcast            any             5-8         262145-*      linear_arena/segment=256K|twotree\n"
    "bcast            any             9-16        262145-*      linear_arena|twotree\n"
    "reduce           any             2-2         0-1K          binomial\n"
    "reduce           any             4-8         262145-512K   binomial\n"
    "reduce           commutative     5-8         524289-8M     linear_arena|twotree\n";

static bool is_pow2(uint64_t v) { return v && !(v & (v - 1)); }

static bool parse_size(const char *s, uint64_t *out)
{
    const char *e = size_prefix(s, out);
    return e && !*e;
}

/* "*", "N", "LO-HI", "LO-*" */
static bool parse_range(char *s, uint64_t *lo, uint64_t *hi)
{
    if (!strcmp(s, "*")) {
        *lo = 0, *hi = UINT64_MAX;
        return true;
    }
    char *dash = strchr(s, '-');
    if (!dash)
        return parse_size(s, lo) && (*hi = *lo, true);
    *dash = '\0';
    if (!parse_size(s, lo))
        return false;
    if (!strcmp(dash + 1, "*")) {
        *hi = UINT64_MAX;
        return true;
    }
    return parse_size(dash + 1, hi);
}

static int row_error(const char *source, int line, const char *field, const char *fmt,
                     const char *what)
{
    char msg[160];
    snprintf(msg, sizeof msg, fmt, what);
    return weft_error(WEFT_EINVAL, "%s:%d: %s: %s", source, line, field, msg);
}

static int parse_choices(char *s, tune_row_t *r, const char *source)
{
    for (char *save = NULL, *c = strtok_r(s, "|", &save); c; c = strtok_r(NULL, "|", &save)) {
        if (r->nchoice == TUNE_CHOICES)
            return row_error(source, r->line, "algorithms", "more than %s in one row", "4");
        tune_choice_t *ch = &r->choice[r->nchoice++];
        snprintf(ch->text, sizeof ch->text, "%s", c);
        char *slash = strchr(c, '/');
        if (slash)
            *slash = '\0';
        if (!(ch->al = algo_find(r->coll, c)))
            return row_error(source, r->line, "algorithms", "no algorithm '%s' for this "
                             "collective (see `weft algorithms`)", c);
        if (slash) {
            for (char *p = slash + 1; *p; p++)
                if (*p == ';')
                    *p = ',';
            if (algo_parse_params(ch->al, slash + 1, &ch->params))
                return row_error(source, r->line, "algorithms", "%s", weft_last_error());
        }
    }
    return r->nchoice ? WEFT_OK
                      : row_error(source, r->line, "algorithms", "%s", "no algorithm named");
}

static int parse_row(char **f, tune_row_t *r, const char *source)
{
    int line = r->line;
    if ((r->coll = coll_from_name(f[0])) == WEFT_COLL_COUNT)
        return row_error(source, line, "collective", "unknown collective '%s'", f[0]);
    if (!strcmp(f[1], "any") || !strcmp(f[1], "-"))
        r->ops = TUNE_OPS_ANY;
    else if (!strcmp(f[1], "commutative"))
        r->ops = TUNE_OPS_COMMUTATIVE;
    else if (!strcmp(f[1], "noncommutative"))
        r->ops = TUNE_OPS_NONCOMMUTATIVE;
    else
        return row_error(source, line, "ops", "'%s': want any, commutative or noncommutative",
                         f[1]);
    char ranks[64], bytes[64]; /* as written: parse_range cuts at the dash */
    snprintf(ranks, sizeof ranks, "%s", f[2]);
    snprintf(bytes, sizeof bytes, "%s", f[3]);
    char *colon = strchr(f[2], ':');
    r->pclass = TUNE_P_ALL;
    if (colon) {
        *colon = '\0';
        if (!strcmp(colon + 1, "pow2"))
            r->pclass = TUNE_P_POW2;
        else if (!strcmp(colon + 1, "notpow2"))
            r->pclass = TUNE_P_NOTPOW2;
        else
            return row_error(source, line, "ranks", "':%s': want :pow2 or :notpow2", colon + 1);
    }
    if (!parse_range(f[2], &r->p_lo, &r->p_hi))
        return row_error(source, line, "ranks", "'%s': want *, N, LO-HI or LO-*", ranks);
    if (r->p_lo == 0)
        r->p_lo = 1;
    if (r->p_lo > r->p_hi)
        return row_error(source, line, "ranks", "%s: the range is empty (low above high)", ranks);
    if (!parse_range(f[3], &r->b_lo, &r->b_hi))
        return row_error(source, line, "bytes", "'%s': want *, N, LO-HI or LO-* (suffixes K, M, "
                         "G)", bytes);
    if (r->b_lo > r->b_hi)
        return row_error(source, line, "bytes", "%s: the range is empty (low above high)", bytes);
    return parse_choices(f[4], r, source);
}

/* Can one call match both rows? */
static bool rows_overlap(const tune_row_t *a, const tune_row_t *b)
{
    if (a->coll != b->coll || (a->ops && b->ops && a->ops != b->ops))
        return false;
    if (a->b_lo > b->b_hi || b->b_lo > a->b_hi)
        return false;
    uint64_t lo = a->p_lo > b->p_lo ? a->p_lo : b->p_lo, hi = a->p_hi < b->p_hi ? a->p_hi : b->p_hi;
    if (lo > hi)
        return false;
    int pc = a->pclass | b->pclass; /* both classes must hold */
    if (pc == (TUNE_P_POW2 | TUNE_P_NOTPOW2))
        return false;
    if (pc == TUNE_P_POW2) { /* a power of two within [lo, hi]? */
        uint64_t p = 1;
        while (p < lo && p <= UINT64_MAX / 2)
            p *= 2;
        return p >= lo && p <= hi;
    }
    if (pc == TUNE_P_NOTPOW2)
        return hi > lo || !is_pow2(lo);
    return true;
}

/* The blank-separated fields of a line whose comment is cut off: their
 * count, 7 for more than 6. */
static int split_fields(char *ln, char *f[6])
{
    char *hash = strchr(ln, '#');
    if (hash)
        *hash = '\0';
    int nf = 0;
    for (char *s2 = NULL, *w = strtok_r(ln, " \t\r", &s2); w; w = strtok_r(NULL, " \t\r", &s2))
        if (nf < 6)
            f[nf++] = w;
        else
            nf = 7;
    return nf;
}

/* The first line that is not blank: 'weft-tuning 1'. */
static int check_version(char *f[6], int nf, const char *source, int line)
{
    if (nf != 2 || strcmp(f[0], "weft-tuning"))
        return weft_error(WEFT_EINVAL, "%s:%d: version: the first line must be "
                          "'weft-tuning 1'", source, line);
    if (strcmp(f[1], "1"))
        return weft_error(WEFT_EINVAL, "%s:%d: version: '%s' is not a version this weft "
                          "reads (it reads 1)", source, line, f[1]);
    return WEFT_OK;
}

/* A row of the table, refused where it overlaps one before it. */
static int add_row(tune_table_t *t, char *f[6], int nf, const char *source, int line,
                   int *cap)
{
    if (nf != 5)
        return weft_error(WEFT_EINVAL, "%s:%d: row: want 5 fields (collective ops ranks bytes "
                          "algorithms), found %d", source, line, nf > 6 ? 7 : nf);
    if (t->nrows == *cap) {
        int c = *cap ? 2 * *cap : 32;
        tune_row_t *nr = realloc(t->rows, (size_t)c * sizeof *nr);
        if (!nr)
            return weft_error(WEFT_ENOMEM, "out of memory");
        t->rows = nr, *cap = c;
    }
    tune_row_t *r = &t->rows[t->nrows];
    memset(r, 0, sizeof *r);
    r->line = line;
    int rc = parse_row(f, r, source);
    if (rc)
        return rc;
    for (int i = 0; i < t->nrows; i++)
        if (rows_overlap(&t->rows[i], r))
            return weft_error(WEFT_EINVAL, "%s:%d: ranks/bytes: overlaps the row on line %d (a "
                              "call may match one row only; list alternatives in one row as "
                              "A|B)", source, line, t->rows[i].line);
    t->nrows++;
    return WEFT_OK;
}

int tune_parse(const char *text, const char *source, tune_table_t *t)
{
    memset(t, 0, sizeof *t);
    snprintf(t->source, sizeof t->source, "%s", source);
    char *copy = strdup(text);
    if (!copy)
        return weft_error(WEFT_ENOMEM, "out of memory");
    int rc = WEFT_OK, cap = 0, line = 0;
    bool versioned = false;
    for (char *ln = copy, *next; ln && !rc; ln = next) {
        next = strchr(ln, '\n');
        if (next)
            *next++ = '\0';
        line++;
        char *f[6];
        int nf = split_fields(ln, f);
        if (nf == 0)
            continue;
        if (!versioned) {
            rc = check_version(f, nf, source, line);
            versioned = true;
            continue;
        }
        rc = add_row(t, f, nf, source, line, &cap);
    }
    if (!rc && !versioned)
        rc = weft_error(WEFT_EINVAL, "%s: version: empty table (want 'weft-tuning 1' first)",
                        source);
    free(copy);
    if (rc)
        tune_free(t);
    return rc;
}

int tune_load_file(const char *path, tune_table_t *t)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return weft_error(WEFT_EINVAL, "%s: cannot read the tuning file: %s", path,
                          strerror(errno));
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    for (size_t got; buf && (got = fread(buf + n, 1, cap - n - 1, f)) > 0;) {
        n += got;
        if (n + 1 == cap) {
            char *nb = cap < (1u << 24) ? realloc(buf, cap * 2) : NULL;
            if (!nb) {
                free(buf);
                buf = NULL;
            }
            buf = nb, cap *= 2;
        }
    }
    fclose(f);
    if (!buf)
        return weft_error(WEFT_EINVAL, "%s: the tuning file is too large (16 MiB at most)", path);
    buf[n] = '\0';
    if (strlen(buf) != n) {
        free(buf);
        return weft_error(WEFT_EINVAL, "%s: the tuning file is not text", path);
    }
    int rc = tune_parse(buf, path, t);
    free(buf);
    return rc;
}

void tune_free(tune_table_t *t)
{
    free(t->rows);
    t->rows = NULL;
    t->nrows = 0;
}

uint64_t tune_bytes(const coll_args_t *a)
{
    uint64_t b = a->count * a->esize;
    return coll_is_blocked(a->coll) ? b * (uint64_t)a->nrank : b;
}

static bool row_matches(const tune_row_t *r, const coll_args_t *a, uint64_t bytes)
{
    uint64_t P = (uint64_t)a->nrank;
    if (r->coll != a->coll || P < r->p_lo || P > r->p_hi || bytes < r->b_lo || bytes > r->b_hi)
        return false;
    if ((r->pclass == TUNE_P_POW2 && !is_pow2(P)) || (r->pclass == TUNE_P_NOTPOW2 && is_pow2(P)))
        return false;
    return r->ops == TUNE_OPS_ANY || (r->ops == TUNE_OPS_COMMUTATIVE) == a->commutative;
}

static tune_table_t builtin_table, amd_table, file_table;
static bool file_loaded;
static char file_error[400];
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;
static _Atomic int cpu_rows; /* TUNE_CPU_*, set where the tables load */

static const char *const cpu_names[] = {"generic", "amd"};

/* AMD's vendor string, from cpuid leaf 0. */
static int cpu_detect(void)
{
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, c, d;
    if (__get_cpuid(0, &a, &b, &c, &d)) {
        char v[13];
        memcpy(v, &b, 4), memcpy(v + 4, &d, 4), memcpy(v + 8, &c, 4);
        v[12] = '\0';
        if (!strcmp(v, "AuthenticAMD"))
            return TUNE_CPU_AMD;
    }
#endif
    return TUNE_CPU_GENERIC;
}

static int cpu_from_name(const char *name)
{
    for (int k = 0; k < (int)(sizeof cpu_names / sizeof cpu_names[0]); k++)
        if (!strcmp(name, cpu_names[k]))
            return k;
    return !strcmp(name, "auto") ? cpu_detect() : -1;
}

static void load_tables(void)
{
    if (tune_parse(builtin_text, "the built-in table", &builtin_table) ||
        tune_parse(amd_text, "the built-in rows for AMD CPUs", &amd_table))
        fprintf(stderr, "weft: %s\n", weft_last_error()); /* a bug: tests parse them */
    const char *path = getenv("WEFT_TUNING_FILE");
    if (path && *path) {
        if (tune_load_file(path, &file_table) == WEFT_OK) {
            file_loaded = true;
        } else {
            snprintf(file_error, sizeof file_error, "%s", weft_last_error());
            fprintf(stderr, "weft: WEFT_TUNING_FILE: %s; AUTO uses the built-in table\n",
                    file_error);
        }
    }
    const char *cpu = getenv("WEFT_TUNING_CPU");
    int k = cpu && *cpu ? cpu_from_name(cpu) : cpu_detect();
    if (k < 0) {
        fprintf(stderr, "weft: WEFT_TUNING_CPU: '%s' is not amd, generic or auto; AUTO reads "
                "the rows of the CPU it runs on\n", cpu);
        k = cpu_detect();
    }
    atomic_store(&cpu_rows, k);
    weft_error_clear();
}

void tune_active(const tune_table_t **file, const tune_table_t **cpu,
                 const tune_table_t **builtin, const char **err)
{
    pthread_once(&tables_once, load_tables);
    *file = file_loaded ? &file_table : NULL;
    *cpu = atomic_load(&cpu_rows) == TUNE_CPU_AMD ? &amd_table : NULL;
    *builtin = &builtin_table;
    *err = file_error[0] ? file_error : NULL;
}

int tune_set_cpu(const char *name)
{
    int k = cpu_from_name(name);
    if (k < 0)
        return weft_error(WEFT_EINVAL, "CPU rows '%s': want amd, generic or auto", name);
    pthread_once(&tables_once, load_tables);
    atomic_store(&cpu_rows, k);
    return WEFT_OK;
}

const char *tune_cpu(void)
{
    pthread_once(&tables_once, load_tables);
    return cpu_names[atomic_load(&cpu_rows)];
}

/* The first usable choice of the row that matches in t; NULL if none. */
static const tune_choice_t *lookup(const tune_table_t *t, const coll_args_t *a, uint64_t bytes,
                                   tune_trace_fn trace, void *ctx, const tune_row_t **row)
{
    for (int i = 0; i < t->nrows; i++) {
        const tune_row_t *r = &t->rows[i];
        if (!row_matches(r, a, bytes))
            continue;
        for (int c = 0; c < r->nchoice; c++) {
            coll_args_t with = *a;
            with.params = r->choice[c].params;
            char why[256];
            if (!algo_usable_why(r->choice[c].al, &with, why, sizeof why)) {
                *row = r;
                if (trace)
                    trace(ctx, t, r, &r->choice[c], NULL);
                return &r->choice[c];
            }
            if (trace)
                trace(ctx, t, r, &r->choice[c], why);
        }
        return NULL; /* rows do not overlap: no other row of t matches */
    }
    return NULL;
}

int tune_select(const coll_args_t *a, tune_trace_fn trace, void *ctx, tune_pick_t *out)
{
    const tune_table_t *file, *cpu, *builtin;
    const char *err;
    tune_active(&file, &cpu, &builtin, &err);
    uint64_t bytes = tune_bytes(a);
    memset(out, 0, sizeof *out);
    /* the CPU's rows only where every rank shares this CPU */
    const tune_table_t *tables[3] = {file, a->arena_reads ? cpu : NULL, builtin};
    for (int k = 0; k < 3; k++) {
        const tune_row_t *row = NULL;
        const tune_choice_t *c = tables[k] ? lookup(tables[k], a, bytes, trace, ctx, &row) : NULL;
        if (c) {
            out->al = c->al;
            out->params = &c->params;
            out->table = tables[k];
            out->row = row;
            out->text = c->text;
            return WEFT_OK;
        }
    }
    size_t n;
    const algo_t *t = algo_table(&n);
    for (size_t i = 0; i < n; i++) {
        char why[256];
        if (t[i].coll == a->coll && !algo_usable_why(&t[i], a, why, sizeof why)) {
            out->al = &t[i];
            out->text = t[i].name;
            return WEFT_OK;
        }
    }
    return weft_error(WEFT_EINVAL, "%s: no algorithm serves this call", weft_coll_name(a->coll));
}
