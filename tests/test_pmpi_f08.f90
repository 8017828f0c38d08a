! test_pmpi_f08.f90 -- the drop-in under a Fortran 2008 program (`use
! mpi_f08`, whose Open MPI module calls ompi_allreduce_f and its kin rather
! than mpi_allreduce_).  Each collective the drop-in serves, with
! MPI_IN_PLACE where the standard allows it, checked exactly; ierror left
! out of one call, as the f08 interfaces allow.  pmpi_fortran.sh checks that
! weft served the calls.
program test_pmpi_f08
    use mpi_f08
    implicit none
    integer, parameter :: n = 5000
    integer :: rank, nprocs, i, r, root, failures, total, checked
    integer :: a(n), b(n), g(n * 4)
    double precision :: d(n), e(n * 4)
    type(MPI_Op) :: op

    failures = 0
    checked = 0
    call MPI_Init()
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
    call MPI_Barrier(MPI_COMM_WORLD)
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
    subroutine expect(ok, what)
        logical, intent(in) :: ok
        character(*), intent(in) :: what
        checked = checked + 1
        if (.not. ok) then
            failures = failures + 1
            print '(a,a)', 'FAIL: ', what
        end if
    end subroutine

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
