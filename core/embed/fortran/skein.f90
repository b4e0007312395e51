! The skein Fortran module: skein sessions (skein/skein.h) from Fortran 2018,
! through ISO_C_BINDING. Arrays are passed as they are, column-major, their
! indices meaning what PyTorch's do: x(batch, features) is the tensor
! [batch, features].
!
! Copies: the array arguments are `contiguous`, so an actual argument that is
! not (a section such as x(lo:hi, :), some rows of a batch-first array, or
! x(::2, :)) is copied by the compiler into a temporary for the call (and,
! for skein_predict's output, copied back). A contiguous real(c_float) array
! (a whole array, or whole columns such as x(:, 1:2)) reaches the model in
! place; real(c_double) inputs and integer targets are converted into a copy
! by skein. To train on the memory you wrote, fill each batch into an array
! of its own (as examples/embed/pendulum.f90 does).
!
!   use skein
!   type(skein_session) :: s
!   if (skein_create_from_file(s, "surrogate.json", '{"run_dir": "runs/f"}') /= SKEIN_OK) &
!     error stop skein_error_message(s)
!   status = skein_train_step(s, x, y, loss)        ! x(64, 2), y(64, 2): real(c_float)
!   status = skein_end_epoch(s, stop)
!   status = skein_destroy(s)
!
! Build: compile this file with your program (gfortran -std=f2018) and link
! -lskein_c. Every function returns a status (SKEIN_OK = 0); the message of
! a failure is skein_error_message(s).
module skein
  use, intrinsic :: iso_c_binding
  implicit none
  private

  integer, parameter, public :: SKEIN_OK = 0, SKEIN_ERROR_ARGUMENT = 1, SKEIN_ERROR_HANDLE = 2, &
                                SKEIN_ERROR_CONFIG = 3, SKEIN_ERROR_STATE = 4, SKEIN_ERROR_RUNTIME = 5, &
                                SKEIN_ERROR_MEMORY = 6
  integer(c_int), parameter :: FLOAT32 = 0, FLOAT64 = 1, INT32 = 2, INT64 = 3
  integer(c_int), parameter :: COLUMN_MAJOR = 1
  integer, parameter :: MAX_RANK = 8

  ! A session; handle is null until created and after destroyed.
  type, public :: skein_session
    type(c_ptr) :: handle = c_null_ptr
  end type

  ! skein_tensor of skein.h
  type, bind(c) :: c_tensor
    type(c_ptr) :: data
    integer(c_int) :: rank
    type(c_ptr) :: shape
    integer(c_int) :: dtype
    integer(c_int) :: layout
    integer(c_int) :: device_type = 0   ! C ABI 2: 0 host memory, 1 CUDA
    integer(c_int) :: device_index = 0  ! the CUDA device's ordinal
  end type

  public :: skein_create, skein_create_from_file, skein_destroy, skein_train_step, skein_eval_step, &
            skein_predict, skein_end_epoch, skein_save_checkpoint, skein_load_checkpoint, skein_finish, &
            skein_last_value, skein_epoch, skein_rank, skein_run_dir, skein_error_message

  interface skein_train_step
    module procedure train_step_ff, train_step_fi, train_step_dd
  end interface
  interface skein_eval_step
    module procedure eval_step_ff, eval_step_fi, eval_step_dd
  end interface
  interface skein_predict
    module procedure predict_ff, predict_dd
  end interface

  interface
    integer(c_int) function c_create(config, options, out) bind(c, name="skein_session_create")
      import :: c_char, c_ptr, c_int
      character(kind=c_char), dimension(*), intent(in) :: config
      type(c_ptr), value :: options
      type(c_ptr), intent(out) :: out
    end function
    integer(c_int) function c_create_from_file(path, options, out) bind(c, name="skein_session_create_from_file")
      import :: c_char, c_ptr, c_int
      character(kind=c_char), dimension(*), intent(in) :: path
      type(c_ptr), value :: options
      type(c_ptr), intent(out) :: out
    end function
    integer(c_int) function c_destroy(s) bind(c, name="skein_session_destroy")
      import :: c_ptr, c_int
      type(c_ptr), value :: s
    end function
    integer(c_int) function c_train_step(s, x, y, loss) bind(c, name="skein_train_step")
      import :: c_ptr, c_int, c_tensor, c_double
      type(c_ptr), value :: s
      type(c_tensor), intent(in) :: x, y
      real(c_double), intent(out) :: loss
    end function
    integer(c_int) function c_eval_step(s, x, y, loss) bind(c, name="skein_eval_step")
      import :: c_ptr, c_int, c_tensor, c_double
      type(c_ptr), value :: s
      type(c_tensor), intent(in) :: x, y
      real(c_double), intent(out) :: loss
    end function
    integer(c_int) function c_predict(s, x, y) bind(c, name="skein_predict")
      import :: c_ptr, c_int, c_tensor
      type(c_ptr), value :: s
      type(c_tensor), intent(in) :: x
      type(c_tensor), intent(inout) :: y
    end function
    integer(c_int) function c_end_epoch(s, stop) bind(c, name="skein_end_epoch")
      import :: c_ptr, c_int
      type(c_ptr), value :: s
      integer(c_int), intent(out) :: stop
    end function
    integer(c_int) function c_save_checkpoint(s, dir) bind(c, name="skein_save_checkpoint")
      import :: c_ptr, c_int, c_char
      type(c_ptr), value :: s
      character(kind=c_char), dimension(*), intent(in) :: dir
    end function
    integer(c_int) function c_load_checkpoint(s, dir) bind(c, name="skein_load_checkpoint")
      import :: c_ptr, c_int, c_char
      type(c_ptr), value :: s
      character(kind=c_char), dimension(*), intent(in) :: dir
    end function
    integer(c_int) function c_finish(s) bind(c, name="skein_finish")
      import :: c_ptr, c_int
      type(c_ptr), value :: s
    end function
    integer(c_int) function c_last_value(s, key, value) bind(c, name="skein_last_value")
      import :: c_ptr, c_int, c_char, c_double
      type(c_ptr), value :: s
      character(kind=c_char), dimension(*), intent(in) :: key
      real(c_double), intent(out) :: value
    end function
    integer(c_int) function c_epoch(s, epoch) bind(c, name="skein_epoch")
      import :: c_ptr, c_int, c_int64_t
      type(c_ptr), value :: s
      integer(c_int64_t), intent(out) :: epoch
    end function
    integer(c_int) function c_rank(s, rank, world_size) bind(c, name="skein_rank")
      import :: c_ptr, c_int
      type(c_ptr), value :: s
      integer(c_int), intent(out) :: rank, world_size
    end function
    type(c_ptr) function c_run_dir(s) bind(c, name="skein_run_dir")
      import :: c_ptr
      type(c_ptr), value :: s
    end function
    type(c_ptr) function c_last_error(s) bind(c, name="skein_last_error")
      import :: c_ptr
      type(c_ptr), value :: s
    end function
    integer(c_size_t) function c_strlen(p) bind(c, name="strlen")
      import :: c_ptr, c_size_t
      type(c_ptr), value :: p
    end function
  end interface

contains

  ! A Fortran string as a C string.
  function c_string(text) result(out)
    character(len=*), intent(in) :: text
    character(kind=c_char, len=len_trim(text) + 1) :: out
    out = trim(text) // c_null_char
  end function

  ! Creates `s` from the JSON text of a config; `options` as in skein.h.
  integer function skein_create(s, config_json, options_json) result(status)
    type(skein_session), intent(inout) :: s
    character(len=*), intent(in) :: config_json
    character(len=*), intent(in), optional :: options_json
    character(kind=c_char, len=:), allocatable, target :: options
    if (present(options_json)) then
      options = c_string(options_json)
      status = c_create(c_string(config_json), c_loc(options), s%handle)
    else
      status = c_create(c_string(config_json), c_null_ptr, s%handle)
    end if
  end function

  ! Creates `s` from a config file.
  integer function skein_create_from_file(s, config_path, options_json) result(status)
    type(skein_session), intent(inout) :: s
    character(len=*), intent(in) :: config_path
    character(len=*), intent(in), optional :: options_json
    character(kind=c_char, len=:), allocatable, target :: options
    if (present(options_json)) then
      options = c_string(options_json)
      status = c_create_from_file(c_string(config_path), c_loc(options), s%handle)
    else
      status = c_create_from_file(c_string(config_path), c_null_ptr, s%handle)
    end if
  end function

  integer function skein_destroy(s) result(status)
    type(skein_session), intent(inout) :: s
    status = c_destroy(s%handle)
    s%handle = c_null_ptr
  end function

  integer function skein_finish(s) result(status)
    type(skein_session), intent(in) :: s
    status = c_finish(s%handle)
  end function

  ! stop: .true. when a callback (early stopping) asked to stop. SKEIN_ERROR_STATE
  ! when no step was taken in the epoch (an end_epoch twice in a row).
  integer function skein_end_epoch(s, stop) result(status)
    type(skein_session), intent(in) :: s
    logical, intent(out), optional :: stop
    integer(c_int) :: flag
    flag = 0
    status = c_end_epoch(s%handle, flag)
    if (present(stop)) stop = flag /= 0
  end function

  integer function skein_save_checkpoint(s, dir) result(status)
    type(skein_session), intent(in) :: s
    character(len=*), intent(in) :: dir
    status = c_save_checkpoint(s%handle, c_string(dir))
  end function

  integer function skein_load_checkpoint(s, dir) result(status)
    type(skein_session), intent(in) :: s
    character(len=*), intent(in) :: dir
    status = c_load_checkpoint(s%handle, c_string(dir))
  end function

  ! The last closed epoch's value of `key` ("valid_loss", ...).
  integer function skein_last_value(s, key, value) result(status)
    type(skein_session), intent(in) :: s
    character(len=*), intent(in) :: key
    real(c_double), intent(out) :: value
    status = c_last_value(s%handle, c_string(key), value)
  end function

  ! The last closed epoch (0 before the first).
  integer function skein_epoch(s, epoch) result(status)
    type(skein_session), intent(in) :: s
    integer(c_int64_t), intent(out) :: epoch
    status = c_epoch(s%handle, epoch)
  end function

  ! This process's rank (0 to world_size - 1) and the number of processes.
  integer function skein_rank(s, rank, world_size) result(status)
    type(skein_session), intent(in) :: s
    integer, intent(out) :: rank
    integer, intent(out), optional :: world_size
    integer(c_int) :: r, n
    r = 0
    n = 1
    status = c_rank(s%handle, r, n)
    rank = int(r)
    if (present(world_size)) world_size = int(n)
  end function

  ! The run directory ("" for a session not created or destroyed).
  function skein_run_dir(s) result(dir)
    type(skein_session), intent(in) :: s
    character(len=:), allocatable :: dir
    dir = f_string(c_run_dir(s%handle))
  end function

  ! The message of the last failure on `s` (of a failed create when `s` has no handle).
  function skein_error_message(s) result(message)
    type(skein_session), intent(in) :: s
    character(len=:), allocatable :: message
    message = f_string(c_last_error(s%handle))
  end function

  ! A C string (never NULL) as a Fortran string.
  function f_string(p) result(text)
    type(c_ptr), intent(in) :: p
    character(len=:), allocatable :: text
    character(kind=c_char), pointer :: chars(:)
    integer :: n, i
    n = int(c_strlen(p))
    call c_f_pointer(p, chars, [n])
    allocate(character(len=n) :: text)
    do i = 1, n
      text(i:i) = chars(i)
    end do
  end function

  ! A column-major tensor over `data` of shape `shp`, kept in `store`.
  subroutine describe(data, shp, dtype, t, store)
    type(c_ptr), intent(in) :: data
    integer(c_int64_t), intent(in) :: shp(:)
    integer(c_int), intent(in) :: dtype
    type(c_tensor), intent(out) :: t
    integer(c_int64_t), target, intent(inout) :: store(MAX_RANK)
    integer :: r
    r = size(shp)
    store = 0
    store(1:min(r, MAX_RANK)) = shp(1:min(r, MAX_RANK))
    t%data = data
    t%rank = int(r, c_int)
    t%shape = c_loc(store)
    t%dtype = dtype
    t%layout = COLUMN_MAJOR
  end subroutine

  ! A train (train = .true.) or eval step on two described arrays.
  integer function step(s, px, sx, kx, py, sy, ky, train, loss) result(status)
    type(skein_session), intent(in) :: s
    type(c_ptr), intent(in) :: px, py
    integer(c_int64_t), intent(in) :: sx(:), sy(:)
    integer(c_int), intent(in) :: kx, ky
    logical, intent(in) :: train
    real(c_double), intent(out), optional :: loss
    type(c_tensor) :: tx, ty
    integer(c_int64_t), target :: store_x(MAX_RANK), store_y(MAX_RANK)
    real(c_double) :: l
    call describe(px, sx, kx, tx, store_x)
    call describe(py, sy, ky, ty, store_y)
    if (train) then
      status = c_train_step(s%handle, tx, ty, l)
    else
      status = c_eval_step(s%handle, tx, ty, l)
    end if
    if (present(loss)) loss = l
  end function

  ! The specific procedures of the generic names: one per pair of kinds.
  integer function train_step_ff(s, x, y, loss) result(status)
    type(skein_session), intent(in) :: s
    real(c_float), dimension(..), target, contiguous, intent(in) :: x, y
    real(c_double), intent(out), optional :: loss
    status = step(s, c_loc(x), shape(x, c_int64_t), FLOAT32, c_loc(y), shape(y, c_int64_t), FLOAT32, .true., loss)
  end function

  integer function train_step_fi(s, x, y, loss) result(status)
    type(skein_session), intent(in) :: s
    real(c_float), dimension(..), target, contiguous, intent(in) :: x
    integer(c_int32_t), dimension(..), target, contiguous, intent(in) :: y
    real(c_double), intent(out), optional :: loss
    status = step(s, c_loc(x), shape(x, c_int64_t), FLOAT32, c_loc(y), shape(y, c_int64_t), INT32, .true., loss)
  end function

  integer function train_step_dd(s, x, y, loss) result(status)
    type(skein_session), intent(in) :: s
    real(c_double), dimension(..), target, contiguous, intent(in) :: x, y
    real(c_double), intent(out), optional :: loss
    status = step(s, c_loc(x), shape(x, c_int64_t), FLOAT64, c_loc(y), shape(y, c_int64_t), FLOAT64, .true., loss)
  end function

  integer function eval_step_ff(s, x, y, loss) result(status)
    type(skein_session), intent(in) :: s
    real(c_float), dimension(..), target, contiguous, intent(in) :: x, y
    real(c_double), intent(out), optional :: loss
    status = step(s, c_loc(x), shape(x, c_int64_t), FLOAT32, c_loc(y), shape(y, c_int64_t), FLOAT32, .false., loss)
  end function

  integer function eval_step_fi(s, x, y, loss) result(status)
    type(skein_session), intent(in) :: s
    real(c_float), dimension(..), target, contiguous, intent(in) :: x
    integer(c_int32_t), dimension(..), target, contiguous, intent(in) :: y
    real(c_double), intent(out), optional :: loss
    status = step(s, c_loc(x), shape(x, c_int64_t), FLOAT32, c_loc(y), shape(y, c_int64_t), INT32, .false., loss)
  end function

  integer function eval_step_dd(s, x, y, loss) result(status)
    type(skein_session), intent(in) :: s
    real(c_double), dimension(..), target, contiguous, intent(in) :: x, y
    real(c_double), intent(out), optional :: loss
    status = step(s, c_loc(x), shape(x, c_int64_t), FLOAT64, c_loc(y), shape(y, c_int64_t), FLOAT64, .false., loss)
  end function

  ! The model's outputs for x, written into y (whose shape must be theirs).
  integer function predict_any(s, px, sx, py, sy, kind) result(status)
    type(skein_session), intent(in) :: s
    type(c_ptr), intent(in) :: px, py
    integer(c_int64_t), intent(in) :: sx(:), sy(:)
    integer(c_int), intent(in) :: kind
    type(c_tensor) :: tx, ty
    integer(c_int64_t), target :: store_x(MAX_RANK), store_y(MAX_RANK)
    call describe(px, sx, kind, tx, store_x)
    call describe(py, sy, kind, ty, store_y)
    status = c_predict(s%handle, tx, ty)
  end function

  integer function predict_ff(s, x, y) result(status)
    type(skein_session), intent(in) :: s
    real(c_float), dimension(..), target, contiguous, intent(in) :: x
    real(c_float), dimension(..), target, contiguous, intent(inout) :: y
    status = predict_any(s, c_loc(x), shape(x, c_int64_t), c_loc(y), shape(y, c_int64_t), FLOAT32)
  end function

  integer function predict_dd(s, x, y) result(status)
    type(skein_session), intent(in) :: s
    real(c_double), dimension(..), target, contiguous, intent(in) :: x
    real(c_double), dimension(..), target, contiguous, intent(inout) :: y
    status = predict_any(s, c_loc(x), shape(x, c_int64_t), c_loc(y), shape(y, c_int64_t), FLOAT64)
  end function

end module skein
