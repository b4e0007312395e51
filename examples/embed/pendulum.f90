! Online training of a surrogate from a running simulation, in Fortran.
! The same damped pendulum and loop as pendulum.cpp, through the skein module.
!
!   pendulum_f CONFIG RUN_DIR [MAX_EPOCHS]
program pendulum
  use, intrinsic :: iso_c_binding
  use skein
  implicit none
  integer, parameter :: batch = 64, steps = 64, trajectories = 32, pairs = steps * trajectories
  real(c_double), parameter :: dt = 0.1d0
  type(skein_session) :: s
  character(len=1024) :: config, run_dir, arg
  real(c_float) :: x(pairs, 2), y(pairs, 2), vx(2 * steps, 2), vy(2 * steps, 2)
  real(c_float) :: xb(batch, 2), yb(batch, 2), current(1, 2), next(1, 2)
  real(c_double) :: loss, truth(2), sum_sq
  integer :: epoch, max_epochs, lo, i
  logical :: stop

  if (command_argument_count() < 2) then
    print '(a)', 'usage: pendulum_f CONFIG RUN_DIR [MAX_EPOCHS]'
    error stop 2
  end if
  call get_command_argument(1, config)
  call get_command_argument(2, run_dir)
  max_epochs = 30
  if (command_argument_count() > 2) then
    call get_command_argument(3, arg)
    read (arg, *) max_epochs
  end if

  call check(skein_create_from_file(s, trim(config), &
                                    '{"run_dir": "' // trim(run_dir) // '", "overwrite": true}'), 'create')
  call random_seed(put=[(1000 + i, i = 1, 64)])
  call simulate(2, vx, vy)
  do epoch = 1, max_epochs
    call simulate(trajectories, x, y)
    do lo = 1, pairs - batch + 1, batch
      xb = x(lo:lo + batch - 1, :)   ! one contiguous batch, used in place
      yb = y(lo:lo + batch - 1, :)
      call check(skein_train_step(s, xb, yb, loss), 'train_step')
    end do
    call check(skein_eval_step(s, vx, vy, loss), 'eval_step')
    call check(skein_end_epoch(s, stop), 'end_epoch')
    if (stop) exit
  end do
  call check(skein_finish(s), 'finish')

  ! The surrogate in place of the simulator.
  current(1, :) = [1.0, 0.0]
  truth = [1d0, 0d0]
  sum_sq = 0
  do i = 1, 40
    truth = rk4(truth)
    call check(skein_predict(s, current, next), 'predict')
    current = next
    sum_sq = sum_sq + (current(1, 1) - truth(1))**2 + (current(1, 2) - truth(2))**2
  end do
  print '(a, f7.4, a, f7.4, a, f7.4, a)', 'surrogate rollout: 40 steps, rms error ', sqrt(sum_sq / 40), &
    ' (final angle ', current(1, 1), ', simulator ', truth(1), ')'
  call check(skein_destroy(s), 'destroy')

contains

  subroutine check(status, what)
    integer, intent(in) :: status
    character(len=*), intent(in) :: what
    if (status /= SKEIN_OK) then
      print '(a)', 'pendulum_f: ' // what // ': ' // skein_error_message(s)
      error stop 1
    end if
  end subroutine

  function derivative(state) result(d)
    real(c_double), intent(in) :: state(2)
    real(c_double) :: d(2)
    d = [state(2), -sin(state(1)) - 0.1d0 * state(2)]
  end function

  function rk4(state) result(next_state)
    real(c_double), intent(in) :: state(2)
    real(c_double) :: next_state(2), k1(2), k2(2), k3(2), k4(2)
    k1 = derivative(state)
    k2 = derivative(state + dt / 2 * k1)
    k3 = derivative(state + dt / 2 * k2)
    k4 = derivative(state + dt * k3)
    next_state = state + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
  end function

  ! `n` trajectories from random states: rows of (inputs, targets).
  subroutine simulate(n, xs, ys)
    integer, intent(in) :: n
    real(c_float), intent(out) :: xs(:, :), ys(:, :)
    real(c_double) :: state(2), next_state(2), r(2)
    integer :: t, k, row
    row = 0
    do t = 1, n
      call random_number(r)
      state = [4 * r(1) - 2, 2 * r(2) - 1]
      do k = 1, steps
        row = row + 1
        next_state = rk4(state)
        xs(row, :) = real(state, c_float)
        ys(row, :) = real(next_state, c_float)
        state = next_state
      end do
    end do
  end subroutine

end program
