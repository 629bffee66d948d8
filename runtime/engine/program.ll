; The native program runner of cvmc's JIT (runtime/engine/program.py, which documents the protocol): the calling thread
; runs a compiled model's kernel calls in order, the split ones shared by chunks with helper threads; the helpers'
; pool. Linux on x86-64 (the futex system call, `pause`). program.py replaces the upper-case words (spin cycles,
; word counts) with their values before LLVM parses it.

declare i64 @syscall(i64, ...)
declare i32 @sched_yield()
declare void @llvm.x86.sse2.pause()
declare i64 @llvm.readcyclecounter()

define internal void @wake(ptr %word, ptr %sleepers) {
entry:
  %n = load atomic i64, ptr %sleepers seq_cst, align 8
  %any = icmp sgt i64 %n, 0
  br i1 %any, label %go, label %exit
go:
  %w = call i64 (i64, ...) @syscall(i64 202, ptr %word, i32 129, i32 2147483647)
  br label %exit
exit:
  ret void
}

; sleep on *word while it still holds `seen` (futex), counted in *sleepers for the wakers (`wake`); returns at
; once if it moved
define internal void @sleep_on(ptr %word, i64 %seen, ptr %sleepers) {
entry:
  %in = atomicrmw add ptr %sleepers, i64 1 seq_cst, align 8
  %again = load atomic i64, ptr %word seq_cst, align 8
  %moved = icmp ne i64 %again, %seen
  br i1 %moved, label %out, label %futex
futex:
  %low = trunc i64 %again to i32
  %z = call i64 (i64, ...) @syscall(i64 202, ptr %word, i32 128, i32 %low, ptr null)
  br label %out
out:
  %left = atomicrmw sub ptr %sleepers, i64 1 seq_cst, align 8
  ret void
}

; wait until *word >= target (true), or until *stop != 0 when stop is not null (false): spinning `spin_cycles`
; time-stamp counter cycles, then sleeping on the word (and again after each wake-up)
define internal i1 @wait_for(ptr %word, i64 %target, ptr %sleepers, ptr %stop, i64 %spin_cycles) {
entry:
  %check_stop = icmp ne ptr %stop, null
  %t0 = call i64 @llvm.readcyclecounter()
  br label %spin
spin:
  %start = phi i64 [%t0, %entry], [%start, %pause], [%t1, %sleep]
  %now = load atomic i64, ptr %word seq_cst, align 8
  %done = icmp sge i64 %now, %target
  br i1 %done, label %yes, label %stopped
stopped:
  br i1 %check_stop, label %read_stop, label %wait
read_stop:
  %s = load atomic i64, ptr %stop seq_cst, align 8
  %is_stopped = icmp ne i64 %s, 0
  br i1 %is_stopped, label %no, label %wait
wait:
  %t = call i64 @llvm.readcyclecounter()
  %spent = sub i64 %t, %start
  %long = icmp ugt i64 %spent, %spin_cycles
  br i1 %long, label %sleep, label %pause
pause:
  call void @llvm.x86.sse2.pause()
  br label %spin
sleep:
  call void @sleep_on(ptr %word, i64 %now, ptr %sleepers)
  %t1 = call i64 @llvm.readcyclecounter()
  br label %spin
yes:
  ret i1 true
no:
  ret i1 false
}

; claim chunks of call %c until none is left; returns after running its last claimed chunk. The main thread
; claims from the front (units 0, 1, ...), helpers (%back) from the back: each keeps to one end of the rows, so a
; convolution finds most of its input rows where its own thread wrote them (in its core's cache) and only the rows
; where the two ends met cross over. The word `next` holds both counts (front in the low 32 bits, back in the
; high ones), taken by compare-and-swap; a call of 2^32 units or more (its counts would not fit) is claimed from
; the front by every thread (fetch-and-add on the whole word).
define internal void @claim(ptr %call, ptr %sleepers, i1 %back) {
entry:
  %pfn = getelementptr i64, ptr %call, i64 0
  %fn_i = load i64, ptr %pfn, align 8
  %fn = inttoptr i64 %fn_i to ptr
  %ptab = getelementptr i64, ptr %call, i64 1
  %tab_i = load i64, ptr %ptab, align 8
  %tab = inttoptr i64 %tab_i to ptr
  %ptrip = getelementptr i64, ptr %call, i64 2
  %trip = load i64, ptr %ptrip, align 8
  %pchunk = getelementptr i64, ptr %call, i64 4
  %chunk = load i64, ptr %pchunk, align 8
  %pnext = getelementptr i64, ptr %call, i64 5
  %pdone = getelementptr i64, ptr %call, i64 6
  %huge = icmp sge i64 %trip, 4294967296
  br i1 %huge, label %front, label %paired
front:
  %u = atomicrmw add ptr %pnext, i64 %chunk seq_cst, align 8
  %left = icmp slt i64 %u, %trip
  br i1 %left, label %front_run, label %exit
front_run:
  %e0 = add i64 %u, %chunk
  %over = icmp sgt i64 %e0, %trip
  %e = select i1 %over, i64 %trip, i64 %e0
  br label %run
paired:
  %w = load atomic i64, ptr %pnext seq_cst, align 8
  %f = and i64 %w, 4294967295
  %b = lshr i64 %w, 32
  %used = add i64 %f, %b
  %rest = sub i64 %trip, %used
  %any = icmp sgt i64 %rest, 0
  br i1 %any, label %take, label %exit
take:
  %small = icmp slt i64 %rest, %chunk
  %n = select i1 %small, i64 %rest, i64 %chunk
  %n_hi = shl i64 %n, 32
  %inc = select i1 %back, i64 %n_hi, i64 %n
  %new = add i64 %w, %inc
  %pair = cmpxchg ptr %pnext, i64 %w, i64 %new seq_cst seq_cst, align 8
  %ok = extractvalue { i64, i1 } %pair, 1
  br i1 %ok, label %paired_run, label %paired
paired_run:
  %top = sub i64 %trip, %b
  %from_top = sub i64 %top, %n
  %pb = select i1 %back, i64 %from_top, i64 %f
  %pe = add i64 %pb, %n
  br label %run
run:
  %rb = phi i64 [%u, %front_run], [%pb, %paired_run]
  %re = phi i64 [%e, %front_run], [%pe, %paired_run]
  call void %fn(ptr %tab, i64 %rb, i64 %re)
  %cnt = sub i64 %re, %rb
  %d = atomicrmw add ptr %pdone, i64 %cnt seq_cst, align 8
  %d1 = add i64 %d, %cnt
  %all = icmp sge i64 %d1, %trip
  br i1 %all, label %wake, label %again
wake:
  call void @wake(ptr %pdone, ptr %sleepers)
  br label %again
again:
  br i1 %huge, label %front, label %paired
exit:
  ret void
}

; the helpers' pool (`_Pool`), int64 words: [generation, sleepers, program, tickets, inside, joined]. A helper
; thread lives in @cvmc_pool_worker: it waits for the generation to move (spinning POOL_SPIN_CYCLES time-stamp
; counter cycles, about a millisecond, so that back-to-back runs find it awake, then on a futex), takes a ticket if
; one is left, and runs the published program's helper, counted in `inside` (and in `joined`, for tests). A run
; publishes its program and tickets (@cvmc_pool_publish) and retires it when done (@cvmc_pool_retire: no program,
; no ticket, then it waits until no helper is inside, which takes microseconds: every chunk is done by then and
; `stop` is set), so no helper ever touches a program outside its run, and no helper ever needs Python's lock.
define void @cvmc_pool_worker(ptr %pool) {
entry:
  %pprog = getelementptr i64, ptr %pool, i64 2
  %ptickets = getelementptr i64, ptr %pool, i64 3
  %pinside = getelementptr i64, ptr %pool, i64 4
  %pjoined = getelementptr i64, ptr %pool, i64 5
  br label %loop
loop:
  %last = phi i64 [0, %entry], [%gen, %loop], [%gen, %skip], [%gen, %left]
  %next_gen = add i64 %last, 1
  %sleepers = getelementptr i64, ptr %pool, i64 1
  %woke = call i1 @wait_for(ptr %pool, i64 %next_gen, ptr %sleepers, ptr null, i64 POOL_SPIN_CYCLES)
  %gen = load atomic i64, ptr %pool seq_cst, align 8
  %t = atomicrmw sub ptr %ptickets, i64 1 seq_cst, align 8
  %got = icmp sgt i64 %t, 0
  br i1 %got, label %enter, label %loop
enter:
  %in = atomicrmw add ptr %pinside, i64 1 seq_cst, align 8
  %prog_i = load atomic i64, ptr %pprog seq_cst, align 8
  %none = icmp eq i64 %prog_i, 0
  br i1 %none, label %skip, label %help
help:
  %prog = inttoptr i64 %prog_i to ptr
  %j = atomicrmw add ptr %pjoined, i64 1 seq_cst, align 8
  call void @cvmc_program_helper(ptr %prog)
  br label %left
skip:
  %out0 = atomicrmw sub ptr %pinside, i64 1 seq_cst, align 8
  br label %loop
left:
  %out1 = atomicrmw sub ptr %pinside, i64 1 seq_cst, align 8
  br label %loop
}

define void @cvmc_pool_publish(ptr %pool, ptr %prog, i64 %tickets) {
entry:
  %sleepers = getelementptr i64, ptr %pool, i64 1
  %pprog = getelementptr i64, ptr %pool, i64 2
  %ptickets = getelementptr i64, ptr %pool, i64 3
  %prog_i = ptrtoint ptr %prog to i64
  store atomic i64 %prog_i, ptr %pprog seq_cst, align 8
  store atomic i64 %tickets, ptr %ptickets seq_cst, align 8
  %g = atomicrmw add ptr %pool, i64 1 seq_cst, align 8
  call void @wake(ptr %pool, ptr %sleepers)
  ret void
}

define void @cvmc_pool_retire(ptr %pool) {
entry:
  %pprog = getelementptr i64, ptr %pool, i64 2
  %ptickets = getelementptr i64, ptr %pool, i64 3
  %pinside = getelementptr i64, ptr %pool, i64 4
  store atomic i64 0, ptr %pprog seq_cst, align 8
  store atomic i64 0, ptr %ptickets seq_cst, align 8
  call void @drain(ptr %pinside)
  ret void
}

; wait, yielding the CPU, until no thread is counted in *count
define internal void @drain(ptr %count) {
entry:
  br label %check
check:
  %n = load atomic i64, ptr %count seq_cst, align 8
  %busy = icmp sgt i64 %n, 0
  br i1 %busy, label %yield, label %done
yield:
  %y = call i32 @sched_yield()
  br label %check
done:
  ret void
}

define void @cvmc_program_begin(ptr %prog) {
entry:
  %calls = load i64, ptr %prog, align 8
  %pactive = getelementptr i64, ptr %prog, i64 2
  call void @drain(ptr %pactive)
  br label %reset
reset:
  %c = phi i64 [0, %entry], [%c1, %zero]
  %more = icmp slt i64 %c, %calls
  br i1 %more, label %zero, label %go
zero:
  %base = mul i64 %c, CALL_WORDS
  %at = add i64 %base, PROGRAM_WORDS_PLUS_5
  %pnext = getelementptr i64, ptr %prog, i64 %at
  store i64 0, ptr %pnext, align 8
  %pdone = getelementptr i64, ptr %pnext, i64 1
  store i64 0, ptr %pdone, align 8
  %c1 = add i64 %c, 1
  br label %reset
go:
  %pstop = getelementptr i64, ptr %prog, i64 1
  store atomic i64 0, ptr %pstop seq_cst, align 8
  ret void
}

define void @cvmc_program_main(ptr %prog) {
entry:
  %calls = load i64, ptr %prog, align 8
  %sleepers = getelementptr i64, ptr %prog, i64 3
  br label %loop
loop:
  %c = phi i64 [0, %entry], [%c1, %next]
  %more = icmp slt i64 %c, %calls
  br i1 %more, label %body, label %exit
body:
  %base = mul i64 %c, CALL_WORDS
  %at = add i64 %base, PROGRAM_WORDS
  %call = getelementptr i64, ptr %prog, i64 %at
  %pflags = getelementptr i64, ptr %call, i64 3
  %flags = load i64, ptr %pflags, align 8
  %split = icmp ne i64 %flags, 0
  %ptrip = getelementptr i64, ptr %call, i64 2
  %trip = load i64, ptr %ptrip, align 8
  %pdone = getelementptr i64, ptr %call, i64 6
  br i1 %split, label %share, label %whole
share:
  call void @claim(ptr %call, ptr %sleepers, i1 false)
  %ok = call i1 @wait_for(ptr %pdone, i64 %trip, ptr %sleepers, ptr null, i64 WAIT_SPIN_CYCLES)
  br label %next
whole:
  %fn_i = load i64, ptr %call, align 8
  %fn = inttoptr i64 %fn_i to ptr
  %ptab = getelementptr i64, ptr %call, i64 1
  %tab_i = load i64, ptr %ptab, align 8
  %tab = inttoptr i64 %tab_i to ptr
  call void %fn(ptr %tab, i64 0, i64 %trip)
  store atomic i64 %trip, ptr %pdone seq_cst, align 8
  call void @wake(ptr %pdone, ptr %sleepers)
  br label %next
next:
  %c1 = add i64 %c, 1
  br label %loop
exit:
  %pstop = getelementptr i64, ptr %prog, i64 1
  store atomic i64 1, ptr %pstop seq_cst, align 8
  ret void
}

define void @cvmc_program_helper(ptr %prog) {
entry:
  %calls = load i64, ptr %prog, align 8
  %pstop = getelementptr i64, ptr %prog, i64 1
  %pactive = getelementptr i64, ptr %prog, i64 2
  %sleepers = getelementptr i64, ptr %prog, i64 3
  %in = atomicrmw add ptr %pactive, i64 1 seq_cst, align 8
  %s = load atomic i64, ptr %pstop seq_cst, align 8
  %stopped = icmp ne i64 %s, 0
  br i1 %stopped, label %exit, label %loop
loop:
  %c = phi i64 [0, %entry], [%c1, %next]
  %more = icmp slt i64 %c, %calls
  br i1 %more, label %body, label %exit
body:
  %base = mul i64 %c, CALL_WORDS
  %at = add i64 %base, PROGRAM_WORDS
  %call = getelementptr i64, ptr %prog, i64 %at
  %first = icmp eq i64 %c, 0
  br i1 %first, label %ready, label %wait_previous
wait_previous:
  %prev_at = sub i64 %at, CALL_WORDS
  %prev = getelementptr i64, ptr %prog, i64 %prev_at
  %pptrip = getelementptr i64, ptr %prev, i64 2
  %ptrip = load i64, ptr %pptrip, align 8
  %ppdone = getelementptr i64, ptr %prev, i64 6
  %ok = call i1 @wait_for(ptr %ppdone, i64 %ptrip, ptr %sleepers, ptr %pstop, i64 WAIT_SPIN_CYCLES)
  br i1 %ok, label %ready, label %exit
ready:
  %pflags = getelementptr i64, ptr %call, i64 3
  %flags = load i64, ptr %pflags, align 8
  %split = icmp ne i64 %flags, 0
  br i1 %split, label %share, label %next
share:
  call void @claim(ptr %call, ptr %sleepers, i1 true)
  br label %next
next:
  %c1 = add i64 %c, 1
  br label %loop
exit:
  %out = atomicrmw sub ptr %pactive, i64 1 seq_cst, align 8
  ret void
}
