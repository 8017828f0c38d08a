! test_pmpi_f08.f90 -- the drop-in under a Fortran 2008 program (`use
! mpi_f08`, whose Open MPI module calls ompi_allreduce_f and its kin rather
! than mpi_allreduce_).  Each collective the drop-in serves, with
! MPI_IN_PLACE where the standard allows it and array sections, checked
! exactly; ierror left out, as the f08 interfaces allow.  LOGICAL,
! CHARACTER and COMPLEX data, which the drop-in leaves to MPI, right too.  pmpi_fortran.sh checks that
! weft served the calls.
program test_pmpi_f08
    use mpi_f08
    use pmpi_checks
    implicit none
    integer, parameter :: n = 5000
    integer :: rank, nprocs, i, r, root, total, provided
    integer :: counts(4), displs(4)
    integer :: a(n), b(n), g(n * 4), h(2 * n)
    double precision :: d(n), e(n * 4), m(4, n)
    logical :: l(3), lo(3)
    character(len=8) :: word
    complex :: z(2), zo(2)
    type(MPI_Op) :: op

    call MPI_Init_thread(MPI_THREAD_FUNNELED, provided)
    call MPI_Comm_rank(MPI_COMM_WORLD, rank)
    call MPI_Comm_size(MPI_COMM_WORLD, nprocs)
    if (nprocs > 4) error stop 'test_pmpi_f08 runs on at most 4 ranks'

    a = [(rank + i, i = 1, n)]
    call MPI_Allreduce(a, b, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
    call expect(all(b == [(nprocs * (nprocs - 1) / 2 + nprocs * i, i = 1, n)]), 'allreduce')
    d = [(dble(rank * i), i = 1, n)]
    call MPI_Allreduce(MPI_IN_PLACE, d, n, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD)
    call expect(all(d == [(dble((nprocs - 1) * i), i = 1, n)]), 'allreduce in place')
    do root = 0, nprocs - 1
        a = [(rank * i, i = 1, n)]
        b = -1
        if (rank == root) then
            call MPI_Reduce(MPI_IN_PLACE, a, n, MPI_INTEGER, MPI_SUM, root, MPI_COMM_WORLD)
            call expect(all(a == [(nprocs * (nprocs - 1) / 2 * i, i = 1, n)]), 'reduce in place')
        else
            call MPI_Reduce(a, b, n, MPI_INTEGER, MPI_SUM, root, MPI_COMM_WORLD)
        end if
        a = -1
        if (rank == root) a = [(root * 1000 + i, i = 1, n)]
        call MPI_Bcast(a, n, MPI_INTEGER, root, MPI_COMM_WORLD)
        call expect(all(a == [(root * 1000 + i, i = 1, n)]), 'bcast')
    end do
    g = -1
    g(rank * n + 1:rank * n + n) = [(rank * 100000 + i, i = 1, n)]
    call MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, g, n, MPI_INTEGER, MPI_COMM_WORLD)
    call expect(all(g(1:n * nprocs) == [((r * 100000 + i, i = 1, n), r = 0, nprocs - 1)]), 'allgather')
    e(1:n * nprocs) = [(dble(rank + i), i = 1, n * nprocs)]
    call MPI_Reduce_scatter_block(e, d, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD)
    call expect(all(d == [(dble(nprocs * (nprocs - 1) / 2 + nprocs * (rank * n + i)), i = 1, n)]), &
                'reduce_scatter_block')
    e(1:n * nprocs) = [(dble(rank + i), i = 1, n * nprocs)]
    counts(1:nprocs) = n
    call MPI_Reduce_scatter(e, d, counts, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD)
    call expect(all(d == [(dble(nprocs * (nprocs - 1) / 2 + nprocs * (rank * n + i)), i = 1, n)]), &
                'reduce_scatter')
    call MPI_Barrier(MPI_COMM_WORLD)
    ! array sections: the compiler passes a contiguous copy
    h = [(rank * 100 + i, i = 1, 2 * n)]
    call MPI_Allreduce(h(1:2 * n:2), b, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
    call expect(all(b == [(nprocs * (nprocs - 1) / 2 * 100 + nprocs * (2 * i - 1), i = 1, n)]), &
                'allreduce from a section')
    call MPI_Allreduce(MPI_IN_PLACE, h(2:2 * n:2), n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
    call expect(all(h(2:2 * n:2) == [(nprocs * (nprocs - 1) / 2 * 100 + nprocs * 2 * i, i = 1, n)]) &
                .and. all(h(1:2 * n:2) == [(rank * 100 + 2 * i - 1, i = 1, n)]), 'allreduce in place on a section')
    m = rank
    call MPI_Bcast(m(2, :), n, MPI_DOUBLE_PRECISION, nprocs - 1, MPI_COMM_WORLD)
    call expect(all(m(2, :) == nprocs - 1) .and. all(m(1, :) == rank), 'bcast of a row')
    ! types the drop-in leaves to MPI: LOGICAL, CHARACTER, COMPLEX
    l = rank == 0
    call MPI_Allreduce(l, lo, 3, MPI_LOGICAL, MPI_LOR, MPI_COMM_WORLD)
    call expect(all(lo), 'logical or')
    word = 'xxxxxxxx'
    if (rank == 0) word = 'weft1234'
    call MPI_Bcast(word, 8, MPI_CHARACTER, 0, MPI_COMM_WORLD)
    call expect(word == 'weft1234', 'bcast of characters')
    z = cmplx(rank, 1)
    call MPI_Allreduce(z, zo, 2, MPI_COMPLEX, MPI_SUM, MPI_COMM_WORLD)
    call expect(all(zo == cmplx(nprocs * (nprocs - 1) / 2, nprocs)), 'complex sum')
    ! collectives the drop-in leaves to MPI (the profiler records them too)
    do root = 0, nprocs - 1
        g = -1
        if (rank == root) then
            g(root * n + 1:root * n + n) = [(root * 1000 + i, i = 1, n)]
            call MPI_Gather(MPI_IN_PLACE, n, MPI_INTEGER, g, n, MPI_INTEGER, root, MPI_COMM_WORLD)
            call expect(all(g(1:n * nprocs) == [((r * 1000 + i, i = 1, n), r = 0, nprocs - 1)]), &
                        'gather in place')
            call MPI_Scatter(g, n, MPI_INTEGER, MPI_IN_PLACE, n, MPI_INTEGER, root, MPI_COMM_WORLD)
        else
            a = [(rank * 1000 + i, i = 1, n)]
            call MPI_Gather(a, n, MPI_INTEGER, g, n, MPI_INTEGER, root, MPI_COMM_WORLD)
            a = -1
            call MPI_Scatter(g, n, MPI_INTEGER, a, n, MPI_INTEGER, root, MPI_COMM_WORLD)
            call expect(all(a == [(rank * 1000 + i, i = 1, n)]), 'scatter')
        end if
    end do
    g(1:n * nprocs) = [((rank * 1000 + r * 100 + i, i = 1, n), r = 0, nprocs - 1)]
    call MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, g, n, MPI_INTEGER, MPI_COMM_WORLD)
    call expect(all(g(1:n * nprocs) == [((r * 1000 + rank * 100 + i, i = 1, n), r = 0, nprocs - 1)]), &
                'alltoall in place')
    counts(1:nprocs) = [(r + 1, r = 0, nprocs - 1)]
    displs(1:nprocs) = [(r * (r + 1) / 2, r = 0, nprocs - 1)]
    g = -1
    g(displs(rank + 1) + 1:displs(rank + 1) + rank + 1) = rank
    call MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, g, counts, displs, MPI_INTEGER, &
                        MPI_COMM_WORLD)
    call expect(all(g(1:nprocs * (nprocs + 1) / 2) == [((r, i = 0, r), r = 0, nprocs - 1)]), &
                'allgatherv in place')
    ! allgatherv with blocks of one size (weft's), placed in reverse order
    counts(1:nprocs) = n
    displs(1:nprocs) = [((nprocs - 1 - r) * n, r = 0, nprocs - 1)]
    a = [(rank * 1000 + i, i = 1, n)]
    g = -1
    call MPI_Allgatherv(a, n, MPI_INTEGER, g, counts, displs, MPI_INTEGER, MPI_COMM_WORLD)
    call expect(all(g(1:n * nprocs) == [((r * 1000 + i, i = 1, n), r = nprocs - 1, 0, -1)]), &
                'allgatherv in reverse order')
    a = [(i, i = 1, n)]
    call MPI_Scan(a, b, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
    call expect(all(b == [((rank + 1) * i, i = 1, n)]), 'scan')
    ! an op made under mpi_f08 is unknown to the drop-in: served by MPI, right
    call MPI_Op_create(f08_sum, .true., op)
    a = [(rank + i, i = 1, n)]
    call MPI_Allreduce(a, b, n, MPI_INTEGER, op, MPI_COMM_WORLD)
    call expect(all(b == [(nprocs * (nprocs - 1) / 2 + nprocs * i, i = 1, n)]), 'allreduce f08 op')
    call MPI_Op_free(op)

    call MPI_Allreduce(failures, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
    if (rank == 0) print '(a,i0,a,i0,a,i0,a)', 'test_pmpi_f08 P=', nprocs, ': ', checked, ' checks, ', &
                                             total, ' failures'
    call MPI_Finalize()
    if (total /= 0) stop 1
contains
    subroutine f08_sum(invec, inoutvec, len, datatype)
        use, intrinsic :: iso_c_binding, only: c_ptr, c_f_pointer
        type(c_ptr), value :: invec, inoutvec
        integer :: len
        type(MPI_Datatype) :: datatype
        integer, pointer :: x(:), y(:)
        if (datatype /= MPI_INTEGER) error stop 'f08_sum: not MPI_INTEGER'
        call c_f_pointer(invec, x, [len])
        call c_f_pointer(inoutvec, y, [len])
        y = x + y
    end subroutine
end program
