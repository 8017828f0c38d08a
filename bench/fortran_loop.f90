! fortran_loop.f90 -- a Fortran program's MPI_Allreduce (`use mpi`, REAL,
! MPI_SUM) of 8 B to 16 MiB: per size, 200 calls each after a barrier, the
! median call time, its maximum over ranks.  bench/fortran_loop.sh runs it
! with Open MPI alone and under the drop-in.
program fortran_loop
    use mpi
    implicit none
    integer, parameter :: reps = 200
    integer :: rank, np, ierr, k, it, n
    integer, parameter :: sizes(4) = [2, 256, 262144, 4194304]
    real, allocatable :: a(:), b(:)
    double precision :: t(reps), t0, tmax
    call MPI_Init(ierr)
    call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
    call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)
    do k = 1, size(sizes)
        n = sizes(k)
        allocate(a(n), b(n))
        a = 1.0
        do it = 1, reps
            call MPI_Barrier(MPI_COMM_WORLD, ierr)
            t0 = MPI_Wtime()
            call MPI_Allreduce(a, b, n, MPI_REAL, MPI_SUM, MPI_COMM_WORLD, ierr)
            t(it) = MPI_Wtime() - t0
        end do
        call sort(t)
        call MPI_Reduce(t(reps / 2), tmax, 1, MPI_DOUBLE_PRECISION, MPI_MAX, 0, MPI_COMM_WORLD, ierr)
        if (rank == 0) print '(i10,a,f12.2,a)', 4 * n, ' B  median ', tmax * 1e6, ' us'
        deallocate(a, b)
    end do
    call MPI_Finalize(ierr)
contains
    subroutine sort(x)
        double precision :: x(:), v
        integer :: i, j
        do i = 2, size(x)
            v = x(i)
            j = i - 1
            do while (j >= 1)
                if (x(j) <= v) exit
                x(j + 1) = x(j)
                j = j - 1
            end do
            x(j + 1) = v
        end do
    end subroutine
end program
