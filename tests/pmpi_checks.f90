! pmpi_checks.f90 -- the Fortran drop-in tests' bookkeeping: each check
! counted, the first ten failures printed; the program sums the failures
! over ranks at its end.
module pmpi_checks
    implicit none
    integer :: failures = 0, checked = 0
contains
    subroutine expect(ok, what)
        logical, intent(in) :: ok
        character(*), intent(in) :: what
        checked = checked + 1
        if (.not. ok) then
            failures = failures + 1
            if (failures <= 10) print '(a,a)', 'FAIL: ', what
        end if
    end subroutine
end module
