<#
.SYNOPSIS
  The published benchmark matrix from a Windows initiator, with DiskSpd:
  fill the test span, then 1 MiB sequential write and read at queue depth
  8 per path, 4 KiB random 70/30 at queue depth 32 per path, unbuffered
  and write-through (-Sh). The same matrix as scripts/initiator/fio/ (a unit
  test, tests/unit/test_initiator_matrix.py, compares the two).

.DESCRIPTION
  -Disk N      the MPIO disk's number in Disk Management / Get-Disk (raw
               access: #N; everything on it is overwritten)
  -Paths N     MPIO paths of the disk (default: counted with mpclaim -s -d N)
  -SpanGB G    gigabytes of the disk the runs cover (default: the whole disk;
               it must exceed the target's RAM and this host's)
  -Seconds S   seconds per measured job (default 60), -Warmup S (default 5)
  -FillSeconds S  how long the fill writes (default: span at 150 MB/s)
  -Quick       a short run: span 1 GB, 5 s per job
  -Out DIR     where results go (default .\rtgt-results): one DiskSpd XML
               per job, results.csv and results.json
  -DiskSpd P   path of diskspd.exe (default: found on PATH)

  Not run on the project's machines (no Windows there); the command lines
  are checked against the fio job set by the unit test.
#>
param(
  [Parameter(Mandatory = $true)][int]$Disk,
  [int]$Paths = 0,
  [double]$SpanGB = 0,
  [int]$Seconds = 60,
  [int]$Warmup = 5,
  [int]$FillSeconds = 0,
  [switch]$Quick,
  [string]$Out = ".\rtgt-results",
  [string]$DiskSpd = "diskspd.exe"
)
$ErrorActionPreference = "Stop"

# The matrix. -t<paths> threads with -o outstanding I/Os each: queue depth
# per path. -si: the threads share one sequential offset (one stream).
$Jobs = [ordered]@{
  'fill'        = '-b1M -o8 -w100 -si -Sh'
  'seqwrite-1m' = '-b1M -o8 -w100 -si -Sh'
  'seqread-1m'  = '-b1M -o8 -w0 -si -Sh'
  'randrw70-4k' = '-b4K -o32 -w30 -r -Sh'
}

if ($Quick) { $SpanGB = 1; $Seconds = 5; $Warmup = 1 }
if ($Paths -le 0) {
  $Paths = 1
  try {
    $m = (& mpclaim.exe -s -d $Disk) -join "`n"
    $n = ([regex]::Matches($m, 'Active/Optimized|Active/Unoptimized')).Count
    if ($n -gt 0) { $Paths = $n }
  } catch { }
}
$size = (Get-Disk -Number $Disk).Size
if ($SpanGB -le 0) { $spanBytes = $size } else { $spanBytes = [int64]($SpanGB * 1GB) }
if ($spanBytes -gt $size) { throw "span $spanBytes exceeds disk $Disk ($size bytes)" }
$spanMB = [int64][math]::Floor($spanBytes / 1MB)
if ($FillSeconds -le 0) { $FillSeconds = [int][math]::Ceiling($spanBytes / 150e6) }
New-Item -ItemType Directory -Force -Path $Out | Out-Null

function Invoke-Job([string]$name, [string]$matrixArgs) {
  $dur = if ($name -eq 'fill') { "-d$FillSeconds -W0" } else { "-d$Seconds -W$Warmup" }
  $line = "$matrixArgs -t$Paths $dur -L -Rxml -f$($spanMB)M #$Disk"
  Write-Host "diskspd.ps1: $name : $DiskSpd $line"
  $xml = & $DiskSpd $line.Split(' ')
  if ($LASTEXITCODE -ne 0) { throw "$name : diskspd exit $LASTEXITCODE" }
  $file = Join-Path $Out "$name.xml"
  $xml | Set-Content -Path $file
  [xml]$x = $xml -join "`n"
  $secs = [double]$x.Results.TimeSpan.TestTimeSeconds
  $rb = 0; $wb = 0; $rio = 0; $wio = 0
  foreach ($t in $x.Results.TimeSpan.Thread) {
    foreach ($tg in $t.Target) {
      $rb += [double]$tg.ReadBytes; $wb += [double]$tg.WriteBytes
      $rio += [double]$tg.ReadCount; $wio += [double]$tg.WriteCount
    }
  }
  $lat = $x.Results.TimeSpan.Latency.Bucket
  $p50 = ($lat | Where-Object { $_.Percentile -eq '50' }).TotalMilliseconds
  $p99 = ($lat | Where-Object { $_.Percentile -eq '99' }).TotalMilliseconds
  [pscustomobject]@{
    job = $name; seconds = $secs; paths = $Paths; span_bytes = $spanBytes
    read_mbps = $rb / $secs / 1e6; write_mbps = $wb / $secs / 1e6
    iops = ($rio + $wio) / $secs; p50_ms = [double]$p50; p99_ms = [double]$p99
    end_unix = [DateTimeOffset]::UtcNow.ToUnixTimeSeconds()
  }
}

$results = foreach ($k in $Jobs.Keys) { Invoke-Job $k $Jobs[$k] }
$results | Export-Csv -NoTypeInformation -Path (Join-Path $Out 'results.csv')
$results | ConvertTo-Json | Set-Content -Path (Join-Path $Out 'results.json')
Write-Host "diskspd.ps1: results in $Out (results.csv, results.json)"
