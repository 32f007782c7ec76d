# throughput plot of campaign adaptive-scenarios, written by wavepipe harvest; run: gnuplot throughput.gp
set datafile missing "-"
set grid
set key outside right top
set xtics (2)
set xrange [1.500:2.500]
set xlabel "nodes"
set ylabel "samples/s (median, min-max)"
set yrange [0:*]
set title "adaptive-scenarios: throughput against nodes (strong scaling)"
set terminal svg size 900,540 fixed noenhanced font "sans,12" background rgb "white"
set output 'throughput.svg.tmp'
plot 'harvest.dat' index 0 using 1:2:3:4 with yerrorlines lc 1 lw 2 pt 7 title "scenario=bandwidth-steps adapt=none", \
     'harvest.dat' index 0 using 1:5 with lines lc 1 dt 2 title "ideal (scenario=bandwidth-steps adapt=none)", \
     'harvest.dat' index 1 using 1:2:3:4 with yerrorlines lc 2 lw 2 pt 7 title "scenario=bandwidth-steps adapt=both", \
     'harvest.dat' index 1 using 1:5 with lines lc 2 dt 2 title "ideal (scenario=bandwidth-steps adapt=both)", \
     'harvest.dat' index 2 using 1:2:3:4 with yerrorlines lc 3 lw 2 pt 7 title "scenario=bandwidth-steps-down adapt=none", \
     'harvest.dat' index 2 using 1:5 with lines lc 3 dt 2 title "ideal (scenario=bandwidth-steps-down adapt=none)", \
     'harvest.dat' index 3 using 1:2:3:4 with yerrorlines lc 4 lw 2 pt 7 title "scenario=bandwidth-steps-down adapt=both", \
     'harvest.dat' index 3 using 1:5 with lines lc 4 dt 2 title "ideal (scenario=bandwidth-steps-down adapt=both)", \
     'harvest.dat' index 4 using 1:2:3:4 with yerrorlines lc 5 lw 2 pt 7 title "scenario=preempted-network adapt=none", \
     'harvest.dat' index 4 using 1:5 with lines lc 5 dt 2 title "ideal (scenario=preempted-network adapt=none)", \
     'harvest.dat' index 5 using 1:2:3:4 with yerrorlines lc 6 lw 2 pt 7 title "scenario=preempted-network adapt=both", \
     'harvest.dat' index 5 using 1:5 with lines lc 6 dt 2 title "ideal (scenario=preempted-network adapt=both)", \
     'harvest.dat' index 6 using 1:2:3:4 with yerrorlines lc 7 lw 2 pt 7 title "scenario=contended-gpu adapt=none", \
     'harvest.dat' index 6 using 1:5 with lines lc 7 dt 2 title "ideal (scenario=contended-gpu adapt=none)", \
     'harvest.dat' index 7 using 1:2:3:4 with yerrorlines lc 8 lw 2 pt 7 title "scenario=contended-gpu adapt=both", \
     'harvest.dat' index 7 using 1:5 with lines lc 8 dt 2 title "ideal (scenario=contended-gpu adapt=both)", \
     'harvest.dat' index 8 using 1:2:3:4 with yerrorlines lc 9 lw 2 pt 7 title "scenario=nothing-changes adapt=none", \
     'harvest.dat' index 8 using 1:5 with lines lc 9 dt 2 title "ideal (scenario=nothing-changes adapt=none)", \
     'harvest.dat' index 9 using 1:2:3:4 with yerrorlines lc 10 lw 2 pt 7 title "scenario=nothing-changes adapt=both", \
     'harvest.dat' index 9 using 1:5 with lines lc 10 dt 2 title "ideal (scenario=nothing-changes adapt=both)"
unset output
set terminal pngcairo size 900,540 noenhanced font "sans,10" background rgb "white"
set output 'throughput.png.tmp'
plot 'harvest.dat' index 0 using 1:2:3:4 with yerrorlines lc 1 lw 2 pt 7 title "scenario=bandwidth-steps adapt=none", \
     'harvest.dat' index 0 using 1:5 with lines lc 1 dt 2 title "ideal (scenario=bandwidth-steps adapt=none)", \
     'harvest.dat' index 1 using 1:2:3:4 with yerrorlines lc 2 lw 2 pt 7 title "scenario=bandwidth-steps adapt=both", \
     'harvest.dat' index 1 using 1:5 with lines lc 2 dt 2 title "ideal (scenario=bandwidth-steps adapt=both)", \
     'harvest.dat' index 2 using 1:2:3:4 with yerrorlines lc 3 lw 2 pt 7 title "scenario=bandwidth-steps-down adapt=none", \
     'harvest.dat' index 2 using 1:5 with lines lc 3 dt 2 title "ideal (scenario=bandwidth-steps-down adapt=none)", \
     'harvest.dat' index 3 using 1:2:3:4 with yerrorlines lc 4 lw 2 pt 7 title "scenario=bandwidth-steps-down adapt=both", \
     'harvest.dat' index 3 using 1:5 with lines lc 4 dt 2 title "ideal (scenario=bandwidth-steps-down adapt=both)", \
     'harvest.dat' index 4 using 1:2:3:4 with yerrorlines lc 5 lw 2 pt 7 title "scenario=preempted-network adapt=none", \
     'harvest.dat' index 4 using 1:5 with lines lc 5 dt 2 title "ideal (scenario=preempted-network adapt=none)", \
     'harvest.dat' index 5 using 1:2:3:4 with yerrorlines lc 6 lw 2 pt 7 title "scenario=preempted-network adapt=both", \
     'harvest.dat' index 5 using 1:5 with lines lc 6 dt 2 title "ideal (scenario=preempted-network adapt=both)", \
     'harvest.dat' index 6 using 1:2:3:4 with yerrorlines lc 7 lw 2 pt 7 title "scenario=contended-gpu adapt=none", \
     'harvest.dat' index 6 using 1:5 with lines lc 7 dt 2 title "ideal (scenario=contended-gpu adapt=none)", \
     'harvest.dat' index 7 using 1:2:3:4 with yerrorlines lc 8 lw 2 pt 7 title "scenario=contended-gpu adapt=both", \
     'harvest.dat' index 7 using 1:5 with lines lc 8 dt 2 title "ideal (scenario=contended-gpu adapt=both)", \
     'harvest.dat' index 8 using 1:2:3:4 with yerrorlines lc 9 lw 2 pt 7 title "scenario=nothing-changes adapt=none", \
     'harvest.dat' index 8 using 1:5 with lines lc 9 dt 2 title "ideal (scenario=nothing-changes adapt=none)", \
     'harvest.dat' index 9 using 1:2:3:4 with yerrorlines lc 10 lw 2 pt 7 title "scenario=nothing-changes adapt=both", \
     'harvest.dat' index 9 using 1:5 with lines lc 10 dt 2 title "ideal (scenario=nothing-changes adapt=both)"
unset output
