! test_pmpi_fortran.f90 -- the drop-in under a Fortran program (`use mpi`).
!
! Every collective the drop-in serves, from Fortran (reduce_scatter with
! blocks of one size among them): integer data checked
! exactly, reals holding exact integers, MPI_IN_PLACE wherever the standard
! allows it, MPI_BOTTOM with a type of absolute addresses, every root,
! counts from 0, a commutative and a non-commutative Fortran op (2x2
! matrices over GF(2) packed in an integer: associative, not commutative),
! and MPI_ERR_COUNT reaching ierror.  It checks every result itself, so it
! passes with or without LD_PRELOAD=libweft-mpi.so; pmpi_fortran.sh checks
! that weft served the calls.

! 2x2 matrices over GF(2) for the non-commutative op
module gf2_matrices
    implicit none
contains
    ! the product of two 2x2 matrices over GF(2), each packed in 4 bits
    ! (a11 a12 a21 a22 from bit 3 down)
    integer function matmul2(a, b)
        integer, intent(in) :: a, b
        integer :: x(4), y(4)
        x = [ibits(a, 3, 1), ibits(a, 2, 1), ibits(a, 1, 1), ibits(a, 0, 1)]
        y = [ibits(b, 3, 1), ibits(b, 2, 1), ibits(b, 1, 1), ibits(b, 0, 1)]
        matmul2 = 8 * mod(x(1) * y(1) + x(2) * y(3), 2) + 4 * mod(x(1) * y(2) + x(2) * y(4), 2) &
                + 2 * mod(x(3) * y(1) + x(4) * y(3), 2) + mod(x(3) * y(2) + x(4) * y(4), 2)
    end function

    ! rank r's matrix for element i: three that do not commute
    integer function matrix_of(r, i)
        integer, intent(in) :: r, i
        integer, parameter :: choice(0:2) = [13, 11, 10] ! [[1,1],[0,1]], [[1,0],[1,1]], [[1,0],[1,0]]
        matrix_of = choice(mod(r + i, 3))
    end function
end module

! MPI's user function: inout(i) = in(i) op inout(i), in from lower ranks
subroutine gf2_product(invec, inoutvec, len, datatype)
    use gf2_matrices, only: matmul2
    implicit none
    integer :: len, datatype, i
    integer :: invec(len), inoutvec(len)
    if (.false.) i = datatype ! MPI passes it; these ops need not look
    do i = 1, len
        inoutvec(i) = matmul2(invec(i), inoutvec(i))
    end do
end subroutine

subroutine integer_sum(invec, inoutvec, len, datatype)
    implicit none
    integer :: len, datatype, i
    integer :: invec(len), inoutvec(len)
    if (.false.) i = datatype ! MPI passes it; these ops need not look
    do i = 1, len
        inoutvec(i) = invec(i) + inoutvec(i)
    end do
end subroutine

program test_pmpi_fortran
    use mpi
    use pmpi_checks
    use gf2_matrices
    implicit none
    external gf2_product, integer_sum
    integer, parameter :: counts(5) = [0, 1, 7, 1000, 70000]
    integer :: rank, nprocs, ierr, k, n, i, r, root, total, gf2, mysum, dup
    integer, allocatable :: a(:), b(:), g(:)
    integer(kind=8), allocatable :: l(:)
    real, allocatable :: s(:), t(:)
    double precision, allocatable :: d(:), e(:)
    integer :: bottom_type
    integer(kind=MPI_ADDRESS_KIND) :: address(1)
    integer :: lengths(1), expect_m
    integer, allocatable :: rcounts(:)
    character(len=80) :: what

    call MPI_Init(ierr)
    call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
    call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
    allocate(rcounts(nprocs))
    call MPI_Op_create(gf2_product, .false., gf2, ierr)
    call MPI_Op_create(integer_sum, .true., mysum, ierr)

    do k = 1, size(counts)
        n = counts(k)
        allocate(a(max(n, 1)), b(max(n, 1)), g(max(n, 1) * nprocs), l(max(n, 1)), s(max(n, 1)), &
                 t(max(n, 1)), d(max(n, 1) * nprocs), e(max(n, 1) * nprocs))
        write(what, '(a,i0)') 'n=', n

        ! allreduce, integer sum
        a = [(rank + i, i = 1, size(a))]
        b = -1
        call MPI_Allreduce(a, b, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
        call expect(ierr == MPI_SUCCESS .and. all(b(1:n) == [(nprocs * (nprocs - 1) / 2 + nprocs * i, &
                    i = 1, n)]), 'allreduce sum '//what)

        ! allreduce in place, double precision max
        d(1:n) = [(dble(mod(rank * 7 + i, nprocs)), i = 1, n)]
        call MPI_Allreduce(MPI_IN_PLACE, d, n, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, ierr)
        call expect(ierr == MPI_SUCCESS .and. all(d(1:n) == dble(nprocs - 1)), 'allreduce in place '//what)

        ! the user ops, commutative and not
        a = [(rank * 3 + i, i = 1, size(a))]
        call MPI_Allreduce(a, b, n, MPI_INTEGER, mysum, MPI_COMM_WORLD, ierr)
        call expect(ierr == MPI_SUCCESS .and. all(b(1:n) == [(3 * nprocs * (nprocs - 1) / 2 + nprocs * i, &
                    i = 1, n)]), 'allreduce user sum '//what)
        a = [(matrix_of(rank, i), i = 1, size(a))]
        call MPI_Allreduce(a, b, n, MPI_INTEGER, gf2, MPI_COMM_WORLD, ierr)
        do i = 1, n
            expect_m = matrix_of(0, i)
            do r = 1, nprocs - 1
                expect_m = matmul2(expect_m, matrix_of(r, i))
            end do
            a(i) = expect_m
        end do
        call expect(ierr == MPI_SUCCESS .and. all(b(1:n) == a(1:n)), 'allreduce gf2 in rank order '//what)

        do root = 0, nprocs - 1
            ! reduce, real sum, in place at the root
            s(1:n) = [(real(rank + root + i), i = 1, n)]
            if (rank == root) then
                call MPI_Reduce(MPI_IN_PLACE, s, n, MPI_REAL, MPI_SUM, root, MPI_COMM_WORLD, ierr)
                call expect(ierr == MPI_SUCCESS .and. all(s(1:n) == [(real(nprocs * (nprocs - 1) / 2 &
                            + nprocs * (root + i)), i = 1, n)]), 'reduce in place '//what)
            else
                t = -1
                call MPI_Reduce(s, t, n, MPI_REAL, MPI_SUM, root, MPI_COMM_WORLD, ierr)
                call expect(ierr == MPI_SUCCESS .and. all(t(1:n) == -1), 'reduce leaves non-roots '//what)
            end if

            ! bcast, 8-byte integers
            l = -1
            if (rank == root) l(1:n) = [(int(root, 8) * 2_8**40 + i, i = 1, n)]
            call MPI_Bcast(l, n, MPI_INTEGER8, root, MPI_COMM_WORLD, ierr)
            call expect(ierr == MPI_SUCCESS .and. all(l(1:n) == [(int(root, 8) * 2_8**40 + i, i = 1, n)]), &
                        'bcast '//what)
        end do

        ! allgather, and in place
        a = [(rank * 100000 + i, i = 1, size(a))]
        g = -1
        call MPI_Allgather(a, n, MPI_INTEGER, g, n, MPI_INTEGER, MPI_COMM_WORLD, ierr)
        call expect(ierr == MPI_SUCCESS .and. all(g(1:n * nprocs) == [((r * 100000 + i, i = 1, n), &
                    r = 0, nprocs - 1)]), 'allgather '//what)
        g = -1
        g(rank * n + 1:rank * n + n) = a(1:n)
        call MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, g, n, MPI_INTEGER, MPI_COMM_WORLD, ierr)
        call expect(ierr == MPI_SUCCESS .and. all(g(1:n * nprocs) == [((r * 100000 + i, i = 1, n), &
                    r = 0, nprocs - 1)]), 'allgather in place '//what)

        ! allgatherv with blocks of one size, in a row
        rcounts = n
        g = -1
        call MPI_Allgatherv(a, n, MPI_INTEGER, g, rcounts, [(r * n, r = 0, nprocs - 1)], MPI_INTEGER, &
                            MPI_COMM_WORLD, ierr)
        call expect(ierr == MPI_SUCCESS .and. all(g(1:n * nprocs) == [((r * 100000 + i, i = 1, n), &
                    r = 0, nprocs - 1)]), 'allgatherv '//what)

        ! reduce_scatter_block, double precision
        e(1:n * nprocs) = [(dble(rank + i), i = 1, n * nprocs)]
        d = -1
        call MPI_Reduce_scatter_block(e, d, n, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
        call expect(ierr == MPI_SUCCESS .and. all(d(1:n) == [(dble(nprocs * (nprocs - 1) / 2 &
                    + nprocs * (rank * n + i)), i = 1, n)]), 'reduce_scatter_block '//what)
        ! reduce_scatter with blocks of one size, in place
        rcounts = n
        call MPI_Reduce_scatter(MPI_IN_PLACE, e, rcounts, MPI_DOUBLE_PRECISION, MPI_SUM, &
                                MPI_COMM_WORLD, ierr)
        call expect(ierr == MPI_SUCCESS .and. all(e(1:n) == [(dble(nprocs * (nprocs - 1) / 2 &
                    + nprocs * (rank * n + i)), i = 1, n)]), 'reduce_scatter in place '//what)

        ! bcast from MPI_BOTTOM with a type of absolute addresses
        if (n > 0) then
            a = -1
            if (rank == 0) a(1:n) = [(7 * i, i = 1, n)]
            call MPI_Get_address(a, address(1), ierr)
            lengths(1) = n
            call MPI_Type_create_hindexed(1, lengths, address, MPI_INTEGER, bottom_type, ierr)
            call MPI_Type_commit(bottom_type, ierr)
            call MPI_Bcast(MPI_BOTTOM, 1, bottom_type, 0, MPI_COMM_WORLD, ierr)
            call expect(ierr == MPI_SUCCESS .and. all(a(1:n) == [(7 * i, i = 1, n)]), 'bcast MPI_BOTTOM '//what)
            call MPI_Type_free(bottom_type, ierr)
        end if

        call MPI_Barrier(MPI_COMM_WORLD, ierr)
        call expect(ierr == MPI_SUCCESS, 'barrier')
        deallocate(a, b, g, l, s, t, d, e)
    end do

    ! an error reaches ierror under MPI_ERRORS_RETURN
    call MPI_Comm_dup(MPI_COMM_WORLD, dup, ierr)
    call MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN, ierr)
    allocate(a(1), b(1))
    call MPI_Allreduce(a, b, -1, MPI_INTEGER, MPI_SUM, dup, ierr)
    call expect(ierr /= MPI_SUCCESS, 'a negative count fails')
    call MPI_Comm_free(dup, ierr)

    call MPI_Op_free(gf2, ierr)
    call MPI_Op_free(mysum, ierr)
    call MPI_Allreduce(failures, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    if (rank == 0) print '(a,i0,a,i0,a,i0,a)', 'test_pmpi_fortran P=', nprocs, ': ', checked, &
                                             ' checks, ', total, ' failures'
    call MPI_Finalize(ierr)
    if (total /= 0) stop 1
end program
