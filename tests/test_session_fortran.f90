! The skein Fortran module against a live session: the queries (skein_epoch,
! skein_rank, skein_run_dir), an end_epoch without a step refused with its
! status, and which arrays reach the model in place (a contiguous float32
! array) and which the compiler copies (a non-contiguous section).
!
!   test_session_fortran RUN_DIR PLUGIN_DIR     (PLUGIN_DIR: the probe_callback test plugin)
program test_session_fortran
  use, intrinsic :: iso_c_binding
  use skein
  implicit none
  type(skein_session) :: s
  character(len=4096) :: run, plugins
  real(c_float), target :: x(4, 3), big(8, 3), y(4, 2)
  integer(c_int64_t) :: epoch
  integer :: rank, world_size, failures
  real(c_double) :: seen

  failures = 0
  call get_command_argument(1, run)
  call get_command_argument(2, plugins)
  call check(skein_create(s, &
    '{"model": {"plugin": "mlp", "hidden": [8]}, "data_info": {"input_shape": [3], "num_classes": 2},' // &
    ' "loss": {"plugin": "mse"}, "callbacks": [{"plugin": "probe_callback", "record_inputs": true}]}', &
    '{"run_dir": "' // trim(run) // '", "overwrite": true, "echo_log": false,' // &
    ' "plugin_dirs": ["' // trim(plugins) // '"]}'), 'create')

  call expect(skein_run_dir(s) == trim(run), 'skein_run_dir is the run_dir option: ' // skein_run_dir(s))
  call check(skein_rank(s, rank, world_size), 'rank')
  call expect(rank == 0 .and. world_size == 1, 'skein_rank: rank 0 of 1 process')
  call check(skein_epoch(s, epoch), 'epoch')
  call expect(epoch == 0, 'skein_epoch is 0 before the first epoch')

  ! No step yet: the epoch would be empty.
  call expect(skein_end_epoch(s) == SKEIN_ERROR_STATE, 'end_epoch without a step is SKEIN_ERROR_STATE')
  call expect(index(skein_error_message(s), 'no step was taken') > 0, 'its message: ' // skein_error_message(s))

  ! A whole float32 array: the model reads the caller's memory.
  call random_number(x)
  call random_number(y)
  call check(skein_train_step(s, x, y), 'train_step (whole array)')
  call check(skein_end_epoch(s), 'end_epoch')
  call check(skein_last_value(s, 'train_input_address', seen), 'last_value')
  call expect(seen == address(x), 'a contiguous float32 array is used in place')

  ! Rows of a taller batch-first array are not contiguous: the compiler copies them.
  call random_number(big)
  call check(skein_train_step(s, big(1:4, :), y), 'train_step (section)')
  call check(skein_end_epoch(s), 'end_epoch')
  call check(skein_last_value(s, 'train_input_address', seen), 'last_value')
  call expect(seen /= address(big), 'a non-contiguous section reaches the model as a copy')

  ! end_epoch twice in a row: refused, the epoch count unchanged.
  call expect(skein_end_epoch(s) == SKEIN_ERROR_STATE, 'a second end_epoch is SKEIN_ERROR_STATE')
  call check(skein_epoch(s, epoch), 'epoch')
  call expect(epoch == 2, 'skein_epoch is 2 after two epochs and a refused end_epoch')

  call check(skein_destroy(s), 'destroy')
  call expect(skein_run_dir(s) == '', 'skein_run_dir of a destroyed session is ""')
  if (failures > 0) error stop 1
  print '(a)', 'test_session_fortran: every check passed'

contains

  real(c_double) function address(a)
    real(c_float), target, intent(in) :: a(:, :)
    address = real(transfer(c_loc(a(1, 1)), 0_c_intptr_t), c_double)
  end function

  subroutine check(status, what)
    integer, intent(in) :: status
    character(len=*), intent(in) :: what
    if (status /= SKEIN_OK) then
      print '(a)', 'test_session_fortran: ' // what // ': ' // skein_error_message(s)
      error stop 1
    end if
  end subroutine

  subroutine expect(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    if (.not. ok) then
      print '(a)', 'test_session_fortran: FAILED: ' // what
      failures = failures + 1
    end if
  end subroutine

end program
